package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// functionNames is the list of functions (docs/architecture.md), written out here so the
// tests do not trust fnSpecs.
var functionNames = []string{"start", "stop", "status", "execute", "files", "install", "fetch", "mcp", "runs", "reaper", "authorizer"}

// synthed is one synthesized stack: the assertions template and its JSON.
type synthed struct {
	tenant string
	outdir string // the cloud assembly, with staged assets
	tpl    assertions.Template
	res    map[string]map[string]any
	out    map[string]any
	// nag is every unsuppressed cdk-nag finding, error or warning.
	nag []string
}

// fakeDist writes a bootstrap per function, as `make build` would.
func fakeDist(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range functionNames {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		body := []byte("#!/bin/sh\necho " + n + "\n")
		if err := os.WriteFile(filepath.Join(dir, n, "bootstrap"), body, 0o755); err != nil {
			t.Fatal(err)
		}
		// make build leaves the deployment zip beside bootstrap.
		if err := os.WriteFile(filepath.Join(dir, n, n+".zip"), []byte("PK\x05\x06 not part of the asset"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// cdkJSON is the repository's cdk.json, so the tests synthesize with the
// same feature flags as `make deploy`.
func cdkJSON(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "cdk.json"))
	if err != nil {
		t.Fatalf("reading cdk.json: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parsing cdk.json: %v", err)
	}
	return doc
}

func newApp(t *testing.T, extra map[string]any) awscdk.App {
	t.Helper()
	return newAppIn(t, extra, t.TempDir())
}

func newAppIn(t *testing.T, extra map[string]any, outdir string) awscdk.App {
	t.Helper()
	ctx := map[string]any{}
	for k, v := range cdkJSON(t)["context"].(map[string]any) {
		ctx[k] = v
	}
	for k, v := range extra {
		ctx[k] = v
	}
	return awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(outdir)})
}

// synth builds the stack from context once; every assertion of a variant
// runs on the result.
func synth(t *testing.T, extra map[string]any) synthed {
	t.Helper()
	outdir := t.TempDir()
	app := newAppIn(t, extra, outdir)
	stack, err := Build(app)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	raw, err := json.Marshal(*tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]map[string]any
		Outputs   map[string]any
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return synthed{tenant: fmt.Sprint(extra["tenant"]), outdir: outdir, tpl: tpl, res: doc.Resources, out: doc.Outputs,
		nag: nagFindings(stack)}
}

// check turns a failed CDK assertion (a panic through jsii) into a test
// error that names what was looked for.
func check(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

func (s synthed) has(t *testing.T, typ string, props map[string]any) {
	t.Helper()
	check(t, typ, func() { s.tpl.HasResourceProperties(jsii.String(typ), props) })
}

func (s synthed) hasResource(t *testing.T, typ string, props map[string]any) {
	t.Helper()
	check(t, typ, func() { s.tpl.HasResource(jsii.String(typ), props) })
}

func (s synthed) count(t *testing.T, typ string, n int) {
	t.Helper()
	check(t, typ+" count", func() { s.tpl.ResourceCountIs(jsii.String(typ), jsii.Number(float64(n))) })
}

// ofType returns the resources of one type by logical id.
func (s synthed) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.res {
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// function finds a function by the name in its description.
func (s synthed) function(t *testing.T, name string) (string, map[string]any) {
	t.Helper()
	want := fmt.Sprintf("sessionbox %s (tenant %s)", name, s.tenant)
	for id, r := range s.ofType("AWS::Lambda::Function") {
		if props(r)["Description"] == want {
			return id, props(r)
		}
	}
	t.Fatalf("no function %q", name)
	return "", nil
}

// ref is the logical id a {"Ref": id} or {"Fn::GetAtt": [id, ...]} names.
func ref(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if r, ok := m["Ref"].(string); ok {
		return r
	}
	if g, ok := m["Fn::GetAtt"].([]any); ok && len(g) > 0 {
		s, _ := g[0].(string)
		return s
	}
	return ""
}

// only returns the single resource of a type.
func (s synthed) only(t *testing.T, typ string) (string, map[string]any) {
	t.Helper()
	all := s.ofType(typ)
	if len(all) != 1 {
		t.Fatalf("%d resources of type %s, want 1", len(all), typ)
	}
	for id, r := range all {
		return id, r
	}
	return "", nil
}

// transferBucket is the transfer bucket (the other bucket, when there is
// one, holds its access logs).
func (s synthed) transferBucket(t *testing.T) (string, map[string]any) {
	t.Helper()
	for id, r := range s.ofType("AWS::S3::Bucket") {
		if strings.HasPrefix(id, "TransferBucket") {
			return id, r
		}
	}
	t.Fatal("no transfer bucket")
	return "", nil
}

// retainPolicy is what a retained data resource's DeletionPolicy is.
func retainPolicy(retain bool) string {
	if retain {
		return "RetainExceptOnCreate"
	}
	return "Delete"
}

// jsonOf renders a template fragment for substring checks on intrinsics.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// strs turns a JSON string-or-array into a sorted list.
func strs(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		out = []string{x}
	case []any:
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
	}
	sort.Strings(out)
	return out
}

func sorted(in ...string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

// nagFindings are the stack's cdk-nag annotations that no suppression
// covered, as "path: message".
func nagFindings(stack awscdk.Stack) []string {
	ann := assertions.Annotations_FromStack(stack)
	pattern := assertions.Match_StringLikeRegexp(jsii.String("^(AwsSolutions|Serverless)-"))
	var out []string
	// Through JSON: the messages' Go type (cxapi) is deprecated in
	// aws-cdk-go, though Annotations still returns it.
	collect := func(msgs any) {
		raw, _ := json.Marshal(msgs)
		var list []struct {
			ID    string `json:"id"`
			Entry struct {
				Data any `json:"data"`
			} `json:"entry"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			out = append(out, "reading cdk-nag annotations: "+err.Error())
		}
		for _, m := range list {
			out = append(out, fmt.Sprintf("%s: %v", m.ID, m.Entry.Data))
		}
	}
	collect(ann.FindError(jsii.String("*"), pattern))
	collect(ann.FindWarning(jsii.String("*"), pattern))
	sort.Strings(out)
	return out
}
