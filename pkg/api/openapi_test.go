package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/problem"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func parseRFC3339(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

func loadDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc(), &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

func docOperation(doc map[string]any, method, path string) map[string]any {
	item, _ := doc["paths"].(map[string]any)[path].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	return op
}

// TestOpenAPIMatchesRoutes fails when the router has a route the document
// lacks, or the document a path or method the router does not serve.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi version %v", doc["openapi"])
	}
	s := New(newFake())
	var routes, documented []string
	for _, rt := range s.routes {
		routes = append(routes, rt.method+" "+rt.path)
		op := docOperation(doc, rt.method, rt.path)
		if op == nil {
			continue
		}
		// Public routes say so; the others inherit the global security.
		if sec, ok := op["security"].([]any); rt.public != (ok && len(sec) == 0) {
			t.Errorf("%s %s: public=%v but security %v", rt.method, rt.path, rt.public, op["security"])
		}
		for _, p := range pathParams(rt.path) {
			if !operationHasParam(doc, op, p, "path") {
				t.Errorf("%s %s: path parameter %s undocumented", rt.method, rt.path, p)
			}
		}
		if !operationHasParam(doc, op, "X-Request-Id", "header") {
			t.Errorf("%s %s: X-Request-Id undocumented", rt.method, rt.path)
		}
		c := schemaChecker{doc: doc}
		for status, resp := range op["responses"].(map[string]any) {
			if headers, _ := c.resolve(resp.(map[string]any))["headers"].(map[string]any); headers["X-Request-Id"] == nil {
				t.Errorf("%s %s %s: response lacks X-Request-Id", rt.method, rt.path, status)
			}
		}
	}
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(routes)
	sort.Strings(documented)
	if !slices.Equal(routes, documented) {
		t.Fatalf("routes and document differ\nrouter:   %v\ndocument: %v", routes, documented)
	}
}

func pathParams(pattern string) []string {
	var out []string
	for _, seg := range strings.Split(pattern, "/") {
		if strings.HasPrefix(seg, "{") {
			out = append(out, strings.Trim(seg, "{}"))
		}
	}
	return out
}

func operationHasParam(doc map[string]any, op map[string]any, name, in string) bool {
	c := schemaChecker{doc: doc}
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		pm := c.resolve(p.(map[string]any))
		if pm["name"] == name && pm["in"] == in {
			return true
		}
	}
	return false
}

// TestOpenAPIProblemTypes checks Problem.type is an enum of exactly the
// problem types the API can send (problem.Kinds), and every documented
// error response is a Problem.
func TestOpenAPIProblemTypes(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	schema := doc["components"].(map[string]any)["schemas"].(map[string]any)["Problem"].(map[string]any)
	documented := asStringsAny(schema["properties"].(map[string]any)["type"].(map[string]any)["enum"])
	var sent []string
	for _, k := range problem.Kinds {
		sent = append(sent, k.Type())
	}
	slices.Sort(documented)
	slices.Sort(sent)
	if !slices.Equal(documented, sent) {
		t.Errorf("Problem.type enum %v, but the API sends %v", documented, sent)
	}
	c := schemaChecker{doc: doc}
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			for status, resp := range op.(map[string]any)["responses"].(map[string]any) {
				code, _ := strconv.Atoi(status)
				if code < 400 {
					continue
				}
				content := c.resolve(resp.(map[string]any))["content"].(map[string]any)
				if _, ok := content[contentTypeProblem]; !ok || len(content) != 1 {
					t.Errorf("%s %s %s: error response is not problem+json only", method, path, status)
				}
			}
		}
	}
}

func asStringsAny(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// TestOpenAPIExamples sends every documented request example to the API and
// checks the handler accepts it, that each example conforms to its schema,
// and that what the handler answers conforms to the documented response.
func TestOpenAPIExamples(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	c := schemaChecker{doc: doc}
	for path, item := range doc["paths"].(map[string]any) {
		for method, rawOp := range item.(map[string]any) {
			op := rawOp.(map[string]any)
			for status, resp := range op["responses"].(map[string]any) {
				content, _ := c.resolve(resp.(map[string]any))["content"].(map[string]any)
				for mt, media := range content {
					m := media.(map[string]any)
					if ex, ok := m["example"]; ok {
						if err := c.check(m["schema"].(map[string]any), ex, fmt.Sprintf("%s %s %s %s example", method, path, status, mt)); err != nil {
							t.Error(err)
						}
					}
				}
			}
			body, ok := op["requestBody"].(map[string]any)
			if !ok {
				continue
			}
			media, ok := body["content"].(map[string]any)["application/json"].(map[string]any)
			if !ok {
				continue
			}
			ex := media["example"]
			if err := c.check(media["schema"].(map[string]any), ex, method+" "+path+" request example"); err != nil {
				t.Error(err)
			}
			raw, _ := json.Marshal(ex)
			h := newHarness(t)
			resp, got := h.do(call{method: strings.ToUpper(method), path: strings.ReplaceAll(path, "{id}", "chat-42"), body: string(raw)})
			if resp.StatusCode/100 != 2 {
				t.Errorf("%s %s: the documented example got %d: %s", method, path, resp.StatusCode, got)
			}
		}
	}
}

// TestResponsesMatchDocument checks every route's answer, success and
// error, against the schema the document gives for its status.
func TestResponsesMatchDocument(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	c := schemaChecker{doc: doc}
	h := newHarness(t)
	for _, vc := range validCalls {
		t.Run(vc.call.method+" "+vc.call.path, func(t *testing.T) {
			h.fake.mu.Lock()
			h.fake.err = nil
			h.fake.mu.Unlock()
			checkAgainstDoc(t, c, doc, vc.call, h)
			// An error of the Manager must be a documented response too.
			h.fake.mu.Lock()
			h.fake.err = errProviderDown
			h.fake.mu.Unlock()
			checkAgainstDoc(t, c, doc, vc.call, h)
		})
	}
	h.fake.mu.Lock()
	h.fake.err = nil
	h.fake.mu.Unlock()
	checkAgainstDoc(t, c, doc, call{method: "GET", path: "/healthz", key: "-"}, h)
	checkAgainstDoc(t, c, doc, call{method: "GET", path: "/v1/sessions/s1/sandbox", key: "-"}, h)
	checkAgainstDoc(t, c, doc, call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":1}`}, h)
}

func checkAgainstDoc(t *testing.T, c schemaChecker, doc map[string]any, cl call, h *harness) {
	t.Helper()
	resp, body := h.do(cl)
	route := matchRoute(t, cl.method, strings.SplitN(cl.path, "?", 2)[0])
	op := docOperation(doc, cl.method, route)
	rawResp, ok := op["responses"].(map[string]any)[strconv.Itoa(resp.StatusCode)]
	if !ok {
		t.Fatalf("%s %s answered %d, which the document does not list", cl.method, route, resp.StatusCode)
	}
	content, _ := c.resolve(rawResp.(map[string]any))["content"].(map[string]any)
	if len(content) == 0 {
		if len(body) != 0 {
			t.Fatalf("%s %s %d: body %q where the document has none", cl.method, route, resp.StatusCode, body)
		}
		return
	}
	ct := strings.SplitN(resp.Header.Get("Content-Type"), ";", 2)[0]
	media, ok := content[ct].(map[string]any)
	if !ok {
		if _, any := content["*/*"]; any {
			return
		}
		t.Fatalf("%s %s %d: Content-Type %s not documented", cl.method, route, resp.StatusCode, ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s %s: body is not JSON: %s", cl.method, route, body)
	}
	if err := c.check(media["schema"].(map[string]any), v, fmt.Sprintf("%s %s %d", cl.method, route, resp.StatusCode)); err != nil {
		t.Fatal(err)
	}
}

// matchRoute finds the route pattern a concrete path is served by.
func matchRoute(t *testing.T, method, path string) string {
	t.Helper()
	s := New(newFake())
	r, _ := http.NewRequest(method, path, nil)
	_, pattern := s.mux.Handler(r)
	if pattern == "" {
		t.Fatalf("no route for %s %s", method, path)
	}
	return strings.SplitN(pattern, " ", 2)[1]
}

var errProviderDown = providerDown()

// TestSchemaCheckerRejects keeps the checker itself honest: a checker that
// accepts everything would make the tests above meaningless.
func TestSchemaCheckerRejects(t *testing.T) {
	t.Parallel()
	c := schemaChecker{doc: loadDoc(t)}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	cases := []struct {
		schema string
		value  string
	}{
		{"Session", `{"sessionId":"s1","pauseOnIdle":false}`},
		{"Session", `{"sessionId":"s1","state":"flying","pauseOnIdle":false}`},
		{"Session", `{"sessionId":"s1","state":"running","pauseOnIdle":false,"extra":1}`},
		{"Session", `{"sessionId":"s1","state":"running","pauseOnIdle":false,"createdAt":"yesterday"}`},
		{"ExecuteRequest", `{"code":""}`},
		{"ExecuteRequest", `{"code":"1","timeoutSecs":1.5}`},
		{"ExecuteRequest", `{"code":"1","envs":{"1x":"a"}}`},
		{"InstallRequest", `{"packages":[]}`},
		{"ExecuteStreamLine", `{"type":"stdout"}`},
		{"ExecuteStreamLine", `{"type":"done","result":{"success":true}}`},
		{"ExecuteStreamLine", `{"type":"done","summary":{"success":true,"stdout":"x","durationMs":1,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}`},
		{"ExecuteStreamLine", `{"type":"error","problem":{"type":"x","title":"t","status":502,"detail":"d"}}`},
		{"InstallStreamLine", `{"type":"result","result":{"isMainResult":true}}`},
		{"Problem", `{"type":"x","title":"t","status":200,"detail":"d"}`},
	}
	for _, tc := range cases {
		var v any
		if err := json.Unmarshal([]byte(tc.value), &v); err != nil {
			t.Fatal(err)
		}
		if err := c.check(ref(tc.schema), v, tc.schema); err == nil {
			t.Errorf("%s accepted %s", tc.schema, tc.value)
		}
	}
}

// TestOpenAPILimits holds the limits the document states to the constants
// the code enforces: a metadata or env map's size, names and values.
func TestOpenAPILimits(t *testing.T) {
	t.Parallel()
	schemas := loadDoc(t)["components"].(map[string]any)["schemas"].(map[string]any)
	for name, pattern := range map[string]string{"Metadata": session.MetadataKeyPattern, "Envs": session.EnvNamePattern} {
		s := schemas[name].(map[string]any)
		if got := s["maxProperties"]; got != float64(session.MaxMapEntries) {
			t.Errorf("%s.maxProperties %v, want %d", name, got, session.MaxMapEntries)
		}
		if got := s["propertyNames"].(map[string]any)["pattern"]; got != pattern {
			t.Errorf("%s.propertyNames.pattern %v, want %s", name, got, pattern)
		}
		if got := s["additionalProperties"].(map[string]any)["maxLength"]; got != float64(session.MaxMapValueBytes) {
			t.Errorf("%s values' maxLength %v, want %d", name, got, session.MaxMapValueBytes)
		}
		desc, _ := s["description"].(string)
		for _, n := range []int{session.MaxMapEntries, session.MaxMapValueBytes} {
			if !strings.Contains(desc, strconv.Itoa(n)) {
				t.Errorf("%s's description does not state %d: %q", name, n, desc)
			}
		}
	}
	// Every map of strings with a bound uses one of the two.
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["maxProperties"]; ok && at != "Metadata" && at != "Envs" {
				t.Errorf("%s: a bounded map that is neither Metadata nor Envs", at)
			}
			for k, e := range x {
				walk(at+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", at, i), e)
			}
		}
	}
	for name, s := range schemas {
		if name == "Metadata" || name == "Envs" {
			continue
		}
		walk(name, s)
	}
}

// TestOpenAPITagsAndMethods checks every operation has a declared tag and
// declares the 405 a path answers to the methods it lacks, and that the
// served 405 is the documented one.
func TestOpenAPITagsAndMethods(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	declared := map[string]bool{}
	for _, tag := range doc["tags"].([]any) {
		declared[tag.(map[string]any)["name"].(string)] = true
	}
	used := map[string]bool{}
	c := schemaChecker{doc: doc}
	h := newHarness(t)
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			o := op.(map[string]any)
			tags, _ := o["tags"].([]any)
			if len(tags) != 1 || !declared[fmt.Sprint(tags[0])] {
				t.Errorf("%s %s: tags %v, want one of %v", method, path, tags, declared)
			}
			for _, tag := range tags {
				used[fmt.Sprint(tag)] = true
			}
			resp, ok := o["responses"].(map[string]any)["405"].(map[string]any)
			if !ok {
				t.Errorf("%s %s: no 405 declared", method, path)
				continue
			}
			if headers := c.resolve(resp)["headers"].(map[string]any); headers["Allow"] == nil {
				t.Errorf("%s %s: the 405 has no Allow header", method, path)
			}
		}
		// A method the path lacks gets the documented 405.
		wrong := "PATCH"
		target := strings.NewReplacer("{id}", "s1", "{runId}", "run_0").Replace(path)
		resp, body := h.do(call{method: wrong, path: target})
		p := checkProblem(t, resp, body, http.StatusMethodNotAllowed)
		if resp.Header.Get("Allow") == "" || p.Type != kindMethod.Type() {
			t.Errorf("%s %s: Allow %q, problem %+v", wrong, path, resp.Header.Get("Allow"), p)
		}
	}
	for tag := range declared {
		if !used[tag] {
			t.Errorf("tag %s is declared but no operation uses it", tag)
		}
	}
}
