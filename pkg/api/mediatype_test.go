package api

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestRequestMediaTypes: a route reads only the media type the document
// lists for its body (or none named); anything else is a 415 naming what
// came and what is accepted, and nothing is stored.
func TestRequestMediaTypes(t *testing.T) {
	t.Parallel()
	const file = "/v1/sessions/s1/files/content?path=data/in.csv"
	tests := []struct {
		name, method, path, ctype, body string
		status                          int
		stored                          string   // what WriteFile received, on a 200 PUT
		detail                          []string // in a 415's detail
		acceptPost                      string
	}{
		{"bytes", "PUT", file, "application/octet-stream", "a,b\n", 200, "a,b\n", nil, ""},
		{"bytes with a parameter", "PUT", file, "application/octet-stream; charset=binary", "a,b\n", 200, "a,b\n", nil, ""},
		{"bytes with no type (a browser's typeless Blob)", "PUT", file, "", "\x00\x01", 200, "\x00\x01", nil, ""},
		{"a JSON-encoded string", "PUT", file, "application/json", `"a,b\n"`, 415, "",
			[]string{`"application/json"`, "application/octet-stream", "as they are"}, ""},
		{"a typed file from a browser", "PUT", file, "text/csv", "a,b\n", 415, "", []string{`"text/csv"`, "application/octet-stream"}, ""},
		{"curl's default form type", "PUT", file, "application/x-www-form-urlencoded", "a,b\n", 415, "",
			[]string{"x-www-form-urlencoded", "application/octet-stream"}, ""},
		{"JSON", "POST", "/v1/sessions/s1/execute", "application/json; charset=utf-8", `{"code":"1"}`, 200, "", nil, ""},
		{"JSON with no type", "POST", "/v1/sessions/s1/execute", "", `{"code":"1"}`, 200, "", nil, ""},
		{"a +json type the document does not list", "POST", "/v1/sessions/s1/execute", "application/merge-patch+json", `{"code":"1"}`, 415, "",
			[]string{"merge-patch+json", "application/json"}, "application/json"},
		{"bytes to a JSON route", "POST", "/v1/sessions/s1/runs", "application/octet-stream", `{"code":"1"}`, 415, "",
			[]string{"octet-stream", "application/json"}, "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			var stored *string
			h.fake.write = func(_ context.Context, _ session.Key, p string, r io.Reader) (session.FileEntry, error) {
				b, err := io.ReadAll(r)
				s := string(b)
				stored = &s
				return session.FileEntry{Name: "in.csv", Path: p, Type: "file", Size: int64(len(b)), ModifiedAt: fakeNow}, err
			}
			// An empty value makes the harness send no Content-Type.
			resp, body := h.do(call{method: tc.method, path: tc.path, body: tc.body, headers: map[string]string{"Content-Type": tc.ctype}})
			if tc.status != 415 {
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
				}
				if tc.method == "PUT" && (stored == nil || *stored != tc.stored) {
					t.Fatalf("stored %v, want %q", stored, tc.stored)
				}
				return
			}
			p := checkProblem(t, resp, body, 415)
			for _, want := range tc.detail {
				if !strings.Contains(p.Detail, want) {
					t.Errorf("detail %q lacks %q", p.Detail, want)
				}
			}
			if got := resp.Header.Get("Accept-Post"); got != tc.acceptPost {
				t.Errorf("Accept-Post %q, want %q", got, tc.acceptPost)
			}
			if stored != nil {
				t.Errorf("a refused body was stored: %q", *stored)
			}
		})
	}
}
