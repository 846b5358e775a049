package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/api"
)

// startLimits are the limits the OpenAPI document gives a start request.
type startLimits struct {
	envs, envValue, meta, metaValue, idle int
	template, envName, metaKey            *regexp.Regexp
}

func documentedStartLimits(t *testing.T) startLimits {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas map[string]schemaNode `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	start, envs := doc.Components.Schemas["StartRequest"].Properties, doc.Components.Schemas["Envs"]
	meta := start["metadata"]
	if ref, ok := strings.CutPrefix(meta.Ref, "#/components/schemas/"); ok {
		meta = doc.Components.Schemas[ref]
	}
	return startLimits{
		envs: envs.MaxProperties, envValue: values(t, envs).MaxLength,
		meta: meta.MaxProperties, metaValue: values(t, meta).MaxLength,
		idle:     start["idleTimeoutSecs"].Maximum,
		template: regexp.MustCompile(start["template"].Pattern),
		envName:  regexp.MustCompile(envs.PropertyNames.Pattern),
		metaKey:  regexp.MustCompile(meta.PropertyNames.Pattern),
	}
}

// schemaNode is the part of a JSON schema the limits are read from.
type schemaNode struct {
	Ref                  string                `json:"$ref"`
	Properties           map[string]schemaNode `json:"properties"`
	PropertyNames        *schemaNode           `json:"propertyNames"`
	AdditionalProperties json.RawMessage       `json:"additionalProperties"` // a schema or false
	MaxProperties        int                   `json:"maxProperties"`
	MaxLength            int                   `json:"maxLength"`
	Maximum              int                   `json:"maximum"`
	Pattern              string                `json:"pattern"`
}

// values is the schema of a map's values.
func values(t *testing.T, n schemaNode) schemaNode {
	t.Helper()
	var v schemaNode
	if err := json.Unmarshal(n.AdditionalProperties, &v); err != nil {
		t.Fatalf("map values: %v", err)
	}
	return v
}

// Names at the documented lengths: a 128-character template (in the
// characters E2B's template aliases take, so the runtime knows it), env
// names of 128 and metadata keys of 64.
var (
	atLimitTemplate = "t" + strings.Repeat("_a-9", 31) + "abc"
	envNameAt       = func(i int) string { return fmt.Sprintf("E%03d", i) + strings.Repeat("_", 124) }
	metaKeyAt       = func(i int) string { return fmt.Sprintf("k.%03d:", i) + strings.Repeat("-", 58) }
)

// startAtLimits is a start request at every documented limit.
func startAtLimits(t *testing.T, l startLimits) map[string]any {
	t.Helper()
	envs, meta := map[string]string{}, map[string]string{}
	for i := range l.envs {
		envs[envNameAt(i)] = strings.Repeat("v", l.envValue)
	}
	for i := range l.meta {
		meta[metaKeyAt(i)] = strings.Repeat("m", l.metaValue)
	}
	if !l.template.MatchString(atLimitTemplate) || len(atLimitTemplate) != 128 ||
		!l.envName.MatchString(envNameAt(0)) || len(envNameAt(0)) != 128 ||
		!l.metaKey.MatchString(metaKeyAt(0)) || len(metaKeyAt(0)) != 64 {
		t.Fatal("the test's names are not at the documented limits")
	}
	return map[string]any{"type": "code_interpreter", "template": atLimitTemplate, "envs": envs, "metadata": meta, "idleTimeoutSecs": l.idle}
}

// TestEndToEndValidation holds the service to the limits its OpenAPI
// document states: a start at every limit is accepted by the real Manager,
// and requests just past one get a 400 (or 413) problem whose detail is the
// Manager's, without a sandbox being started for them.
func TestEndToEndValidation(t *testing.T) {
	s := newStack(t)
	l := documentedStartLimits(t)
	if l.envs != 50 || l.envValue != 4096 || l.meta != 50 || l.metaValue != 4096 || l.idle != 3600 {
		t.Fatalf("the document's start limits %+v are not pkg/session's", l)
	}
	// past is a start at the limits with one change.
	past := func(change func(envs, meta map[string]string, b map[string]any)) map[string]any {
		b := startAtLimits(t, l)
		change(b["envs"].(map[string]string), b["metadata"].(map[string]string), b)
		return b
	}
	t.Run("start at the limits", func(t *testing.T) {
		body := startAtLimits(t, l)
		var v struct {
			State           string            `json:"state"`
			Template        string            `json:"template"`
			IdleTimeoutSecs int               `json:"idleTimeoutSecs"`
			Metadata        map[string]string `json:"metadata"`
		}
		s.json(s.alice, "POST", "/v1/sessions/at-limits/sandbox/start", body, &v)
		if v.State != "running" || v.IdleTimeoutSecs != l.idle || len(v.Metadata) != l.meta || v.Template != atLimitTemplate {
			t.Fatalf("started %+v", v)
		}
		s.json(s.alice, "POST", "/v1/sessions/at-limits/sandbox/stop", nil, nil)
	})

	const sid = "past-limits"
	base := "/v1/sessions/" + sid
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		name, method, path string
		body               any
		headers            []string
		status             int
		detail             string
	}{
		{"51 envs", "POST", base + "/sandbox/start", past(func(envs, _ map[string]string, _ map[string]any) { envs["X"] = "1" }), nil, 400, "envs has more than 50"},
		{"env value of 4097 bytes", "POST", base + "/sandbox/start", past(func(envs, _ map[string]string, _ map[string]any) { envs[envNameAt(0)] += "v" }), nil, 400, "at most 4096 bytes"},
		{"env name of 129", "POST", base + "/sandbox/start", past(func(envs, _ map[string]string, _ map[string]any) {
			envs[envNameAt(0)+"_"] = "1"
			delete(envs, envNameAt(1))
		}), nil, 400, "envs name"},
		{"51 metadata entries", "POST", base + "/sandbox/start", past(func(_, meta map[string]string, _ map[string]any) { meta["x"] = "1" }), nil, 400, "metadata has more than 50"},
		{"metadata value of 4097 bytes", "POST", base + "/sandbox/start", past(func(_, meta map[string]string, _ map[string]any) { meta[metaKeyAt(0)] += "m" }), nil, 400, "at most 4096 bytes"},
		{"metadata key with /", "POST", base + "/sandbox/start", past(func(_, meta map[string]string, _ map[string]any) { meta["team/app"] = "1"; delete(meta, metaKeyAt(1)) }), nil, 400, "metadata name"},
		{"metadata key of 65", "POST", base + "/sandbox/start", past(func(_, meta map[string]string, _ map[string]any) {
			meta[metaKeyAt(0)+"-"] = "1"
			delete(meta, metaKeyAt(1))
		}), nil, 400, "metadata name"},
		{"template with /", "POST", base + "/sandbox/start", past(func(_, _ map[string]string, b map[string]any) { b["template"] = "team/tpl" }), nil, 400, "template must match"},
		{"template of 129", "POST", base + "/sandbox/start", past(func(_, _ map[string]string, b map[string]any) { b["template"] = atLimitTemplate + "a" }), nil, 400, "template must match"},
		{"idle past the lifetime", "POST", base + "/sandbox/start", past(func(_, _ map[string]string, b map[string]any) { b["idleTimeoutSecs"] = l.idle + 1 }), nil, 400, "between 0 and 3600"},
		{"negative idle", "POST", base + "/sandbox/start", map[string]any{"idleTimeoutSecs": -1}, nil, 400, "idleTimeoutSecs"},
		{"unknown type", "POST", base + "/sandbox/start", map[string]any{"type": "gpu"}, nil, 400, "type must be"},
		{"custom without template", "POST", base + "/sandbox/start", map[string]any{"type": "custom"}, nil, 400, "needs a template"},
		{"empty code", "POST", base + "/execute", map[string]any{"code": ""}, nil, 400, "code is empty"},
		{"execute timeout 901", "POST", base + "/execute", map[string]any{"code": "1", "timeoutSecs": 901}, nil, 400, "between 0 and 900"},
		{"negative execute timeout", "POST", base + "/execute", map[string]any{"code": "1", "timeoutSecs": -1}, nil, 400, "timeoutSecs"},
		{"execute env name", "POST", base + "/execute", map[string]any{"code": "1", "envs": map[string]string{"1A": "x"}}, nil, 400, "envs name"},
		{"execute context", "POST", base + "/execute", map[string]any{"code": "1", "context": "a b"}, nil, 400, "context must match"},
		{"streamed execute env value", "POST", base + "/execute", map[string]any{"code": "1", "envs": map[string]string{"A": long(4097)}}, []string{"Accept", "application/x-ndjson"}, 400, "at most 4096 bytes"},
		{"run timeout 901", "POST", base + "/runs", map[string]any{"code": "1", "timeoutSecs": 901}, nil, 400, "between 0 and 900"},
		{"run code of 128 KiB + 1", "POST", base + "/runs", map[string]any{"code": long(128<<10 + 1)}, nil, 413, "limited to"},
		{"idempotency key of 256", "POST", base + "/runs", map[string]any{"code": "1"}, []string{"Idempotency-Key", long(256)}, 400, "idempotency key"},
		{"no packages", "POST", base + "/install", map[string]any{"packages": []string{}}, nil, 400, "packages is empty"},
		{"101 packages", "POST", base + "/install", map[string]any{"packages": strings.Split(strings.Repeat("x,", 100)+"x", ",")}, nil, 400, "at most 100"},
		{"upload of 0 bytes", "POST", base + "/files/upload-url", map[string]any{"path": "a", "sizeBytes": 0}, nil, 400, "at least 1"},
		{"upload past 5 GiB", "POST", base + "/files/upload-url", map[string]any{"path": "a", "sizeBytes": 5<<30 + 1}, nil, 413, "sizeBytes"},
		{"upload content type", "POST", base + "/files/upload-url", map[string]any{"path": "a", "sizeBytes": 1, "contentType": "//"}, nil, 400, "contentType"},
		{"malformed transfer id", "POST", base + "/files/import", map[string]any{"transferId": "../../x"}, nil, 400, "transferId is malformed"},
		{"malformed run id", "GET", "/v1/runs/a%20b", nil, nil, 400, "run id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body *strings.Reader
			if tc.body != nil {
				raw, err := json.Marshal(tc.body)
				if err != nil {
					t.Fatal(err)
				}
				body = strings.NewReader(string(raw))
			}
			var resp *http.Response
			var raw []byte
			if body != nil {
				resp, raw = s.req(s.alice, tc.method, tc.path, body, tc.headers...)
			} else {
				resp, raw = s.req(s.alice, tc.method, tc.path, nil, tc.headers...)
			}
			p := s.problem(tc.status, resp, raw)
			if d, _ := p["detail"].(string); !strings.Contains(d, tc.detail) {
				t.Fatalf("detail %q lacks %q", d, tc.detail)
			}
		})
	}
	if ids := s.sessionSandboxes("alice", sid); len(ids) != 0 {
		t.Fatalf("refused requests started sandboxes %v", ids)
	}
}
