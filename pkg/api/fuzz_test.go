package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzNoServerErrors throws arbitrary requests at every route: whatever
// the input, the answer is never a 5xx, and every error is a problem.
func FuzzNoServerErrors(f *testing.F) {
	seeds := []struct{ method, target, contentType, body string }{
		{"POST", "/v1/sessions/s1/execute", "application/json", `{"code":"1"}`},
		{"POST", "/v1/sessions/s1/execute", "application/json", `{"code":1}`},
		{"POST", "/v1/sessions/s1/sandbox/start", "", `{"type":"custom","envs":{"A":"b"}}`},
		{"POST", "/v1/sessions/s1/install", "application/json", `{"packages":["a==1","b[x]>=2"],"indexUrl":"http://h/simple"}`},
		{"GET", "/v1/sessions/s1/files?path=a&depth=3", "", ""},
		{"PUT", "/v1/sessions/s1/files/content?path=a%00", "text/plain", "data"},
		{"POST", "/v1/sessions/s1/files/upload-url", "application/json", `{"path":"a","sizeBytes":1e400}`},
		{"POST", "/v1/sessions/s1/runs", "application/json; charset=utf-8", `{"code":"x","timeoutSecs":-1}`},
		{"GET", "/v1/sessions?limit=-1&cursor=%ff", "", ""},
		{"DELETE", "/v1/runs/x", "", ""},
		{"OPTIONS", "/v1/sessions/s1/execute", "", ""},
		{"POST", "/v1/sessions/s1/execute", "application/json", strings.Repeat("[", 20000)},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.contentType, s.body)
	}
	srv := New(newFake(), WithLogger(discardLogger()))
	f.Fuzz(func(t *testing.T, method, target, contentType, body string) {
		req, err := http.NewRequest(method, "http://api.test"+target, strings.NewReader(body))
		if err != nil || !strings.HasPrefix(target, "/") {
			return // not a request a server could receive
		}
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s (%s) %q: %d %s", method, target, contentType, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var p Problem
			if rec.Header().Get("Content-Type") != contentTypeProblem || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Status != rec.Code {
				t.Fatalf("%s %s: %d without a problem: %s", method, target, rec.Code, rec.Body)
			}
		}
	})
}
