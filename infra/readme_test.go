package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// checkReadme holds infra/README.md to the synthesized default stack, so
// the document cannot drift from what a deploy creates.
func checkReadme(t *testing.T, s synthed) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	fns := s.ofType("AWS::Lambda::Function")
	if m := regexp.MustCompile(`\| (\d+) Lambda functions \|`).FindStringSubmatch(doc); m == nil || m[1] != strconv.Itoa(len(fns)) {
		t.Errorf("README's resource table counts functions as %v; the stack has %d", m, len(fns))
	}
	t.Run("functions table", func(t *testing.T) { readmeFunctions(t, s, doc) })
	t.Run("streaming", func(t *testing.T) { readmeStreaming(t, s, doc) })
	alarms := len(s.ofType("AWS::CloudWatch::Alarm"))
	counts := regexp.MustCompile(`\b(\d+) (?:standard )?alarms\b`).FindAllStringSubmatch(doc, -1)
	if len(counts) == 0 {
		t.Error("README never says how many alarms there are")
	}
	for _, c := range counts {
		if c[1] != strconv.Itoa(alarms) && c[1] != strconv.Itoa(alarms-1) {
			t.Errorf("README says %q; the default stack has %d alarms", c[0], alarms)
		}
	}
	_, auth := s.only(t, "AWS::ApiGateway::Authorizer")
	ttl := props(auth)["AuthorizerResultTtlInSeconds"].(float64)
	if want := strconv.Itoa(int(ttl)/60) + " min cache keyed on `Authorization`"; !strings.Contains(doc, want) {
		t.Errorf("README's API row does not say %q", want)
	}
	t.Run("options", func(t *testing.T) { readmeOptions(t, doc) })
}

// readmeFunctions: the Functions table has a row per function, with the
// stack's memory and timeout.
func readmeFunctions(t *testing.T, s synthed, doc string) {
	rows := regexp.MustCompile(`(?m)^\| ([a-z]+) \| (\d+) MB \| (\d+) (min|s) \|`).FindAllStringSubmatch(doc, -1)
	seen := map[string]bool{}
	for _, r := range rows {
		_, fn := s.function(t, r[1])
		seen[r[1]] = true
		secs, _ := strconv.Atoi(r[3])
		if r[4] == "min" {
			secs *= 60
		}
		if fn["MemorySize"] != atof(r[2]) || fn["Timeout"] != float64(secs) {
			t.Errorf("README: %s %s MB %s %s; the stack: %v MB %v s", r[1], r[2], r[3], r[4], fn["MemorySize"], fn["Timeout"])
		}
	}
	if len(seen) != len(s.ofType("AWS::Lambda::Function")) {
		t.Errorf("README's Functions table has %d functions, the stack %d", len(seen), len(s.ofType("AWS::Lambda::Function")))
	}
}

// readmeStreaming: the functions named as streamed are those whose routes
// the stack streams.
func readmeStreaming(t *testing.T, s synthed, doc string) {
	m := regexp.MustCompile(`Streaming: every route of ([a-z, ]+?) \(`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("README has no Streaming paragraph")
	}
	var named []string
	for _, part := range strings.Split(strings.ReplaceAll(m[1], " and ", ", "), ", ") {
		named = append(named, strings.TrimSpace(part))
	}
	var streamed []string
	for _, r := range wantRoutes {
		m := s.methods(t)[r.method+" "+r.path]
		if in, _ := m.props["Integration"].(map[string]any); in["ResponseTransferMode"] == "STREAM" {
			streamed = append(streamed, r.fn)
		}
	}
	if got, want := sorted(named...), dedupe(sorted(streamed...)); !equal(got, want) {
		t.Errorf("README streams %v; the stack streams %v", got, want)
	}
}

// readmeOptions: the options table names every context key the app reads
// and nothing else, with the defaults ConfigFromContext applies.
func readmeOptions(t *testing.T, doc string) {
	start := strings.Index(doc, "### Options")
	end := strings.Index(doc[start:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("no Options section")
	}
	defaults := map[string]string{}
	var keys []string
	for _, line := range strings.Split(doc[start:start+end], "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		names := regexp.MustCompile("`([A-Za-z0-9]+)`").FindAllStringSubmatch(cells[0], -1)
		for _, n := range names {
			keys = append(keys, n[1])
		}
		defaults[strings.Trim(cells[0], "| `")] = strings.ReplaceAll(cells[1], "`", "")
	}
	if got, want := sorted(keys...), sorted(contextKeys()...); !equal(got, want) {
		t.Errorf("README's options\n  %v\nthe app reads\n  %v", got, want)
	}
	c, err := ConfigFromContext(ctxOf(map[string]any{"tenant": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	b := strconv.FormatBool
	want := map[string]string{
		"acceptXApiKey": b(c.AcceptXAPIKey), "deletionProtection": b(c.DeletionProtection), "tracing": b(c.Tracing),
		"bucketAccessLogs": b(c.BucketAccessLogs), "wafWebAcl": b(c.WAF), "apiGatewayCloudWatchRole": b(c.APIGatewayCloudWatchRole),
		"playground": b(c.Playground), "logRetentionDays": strconv.Itoa(c.LogRetentionDays), "stageName": c.StageName,
		"logLevel": c.LogLevel, "throttleRate`, `throttleBurst": strconv.FormatFloat(c.ThrottleRate, 'f', -1, 64) + ", " + strconv.FormatFloat(c.ThrottleBurst, 'f', -1, 64),
		"authorizerConcurrency`, `streamConcurrency`, `reaperConcurrency": strconv.Itoa(c.AuthorizerConcurrency) + ", " +
			strconv.Itoa(c.StreamConcurrency) + ", " + strconv.Itoa(c.ReaperConcurrency),
	}
	if c.RetainData {
		want["removalPolicy"] = removalRetain
	}
	for k, v := range want {
		if defaults[k] != v {
			t.Errorf("README gives %s the default %q; the app's is %q", k, defaults[k], v)
		}
	}
}

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

func dedupe(in []string) []string {
	var out []string
	for i, s := range in {
		if i == 0 || s != in[i-1] {
			out = append(out, s)
		}
	}
	return out
}
