package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func (f *fakeManager) UploadURLs(ctx context.Context, key session.Key, req session.URLUploadRequest) (*session.URLUploadResult, error) {
	if err := f.record("UploadURLs", key); err != nil {
		return nil, err
	}
	if err := session.ValidateUploadURLs(req.URLs); err != nil {
		return nil, err
	}
	res := &session.URLUploadResult{Status: session.URLUploadSuccess, Uploaded: []session.URLUploaded{}, Errors: []session.URLUploadError{}}
	for i, u := range req.URLs {
		res.Uploaded = append(res.Uploaded, session.URLUploaded{SourceURL: u, Path: fmt.Sprintf("/home/user/f%d", i), SizeBytes: 3})
	}
	return res, nil
}

// TestUploadURLsBadInput: the URLs are judged before anything is fetched,
// and the answer names each bad one and the limit.
func TestUploadURLsBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	many := make([]string, session.MaxUploadURLs+1)
	for i := range many {
		many[i] = fmt.Sprintf("https://cdn.example.com/%d", i)
	}
	tooMany, _ := json.Marshal(map[string]any{"urls": many})
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"no urls", `{}`, http.StatusBadRequest, `"urls" is required`},
		{"empty list", `{"urls":[]}`, http.StatusBadRequest, "at least one URL"},
		{"not a list", `{"urls":"https://x/y"}`, http.StatusBadRequest, "urls"},
		{"scheme", `{"urls":["https://ok.example/a","file:///etc/passwd","gopher://x/"]}`, http.StatusBadRequest,
			`urls[1] has scheme "file": only http and https are fetched; urls[2] has scheme "gopher"`},
		{"relative", `{"urls":["/etc/passwd"]}`, http.StatusBadRequest, "urls[0] is not an absolute URL"},
		{"too many", string(tooMany), http.StatusRequestEntityTooLarge, "201 URLs, more than the limit of 200"},
		{"unknown field", `{"urls":["https://x/y"],"dest":"a"}`, http.StatusBadRequest, "dest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := h.do(call{method: "POST", path: "/v1/sessions/s1/files/upload-urls", body: tt.body})
			p := checkProblem(t, resp, body, tt.status)
			if !strings.Contains(p.Detail, tt.want) {
				t.Fatalf("detail %q lacks %q", p.Detail, tt.want)
			}
		})
	}
}

// TestUploadURLsDocumentedLimits holds the document's limits to the
// domain's.
func TestUploadURLsDocumentedLimits(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	req := doc["components"].(map[string]any)["schemas"].(map[string]any)["UploadUrlsRequest"].(map[string]any)
	urls := req["properties"].(map[string]any)["urls"].(map[string]any)
	if urls["maxItems"] != float64(session.MaxUploadURLs) || urls["minItems"] != 1.0 {
		t.Errorf("urls: maxItems %v minItems %v, want %d and 1", urls["maxItems"], urls["minItems"], session.MaxUploadURLs)
	}
	if n := urls["items"].(map[string]any)["maxLength"]; n != float64(session.MaxUploadURLBytes) {
		t.Errorf("a URL's maxLength is %v, want %d", n, session.MaxUploadURLBytes)
	}
	if session.MaxUploadURLs*session.MaxUploadURLBytes+64<<10 > defaultJSONBodyBytes {
		t.Errorf("%d URLs of %d bytes do not fit the JSON body limit of %d", session.MaxUploadURLs, session.MaxUploadURLBytes, defaultJSONBodyBytes)
	}
}
