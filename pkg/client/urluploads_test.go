package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestUploadURLsAnswers: a request that ran long is answered 200 with
// spaces first, and then either the result or, when it failed after that,
// a Problem; the client tells the two apart.
func TestUploadURLsAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		status     int
		want       session.URLUploadStatus
		problem    int
	}{
		{"result", `{"status":"success","uploaded":[{"sourceUrl":"https://x/a","path":"/home/user/a","sizeBytes":1}],"errors":[],"restarted":false}`, 200, session.URLUploadSuccess, 0},
		{"late result", "   \n " + `{"status":"failure","uploaded":[],"errors":[{"sourceUrl":"https://x/a","error":"no"}],"restarted":false}`, 200, session.URLUploadFailure, 0},
		{"late problem", "    " + `{"type":"https://sessionbox.dev/problems/provider-timeout","title":"Gateway Timeout","status":504,"detail":"the sandbox did not answer"}`, 200, "", 504},
		{"problem", `{"type":"https://sessionbox.dev/problems/invalid","title":"Bad Request","status":400,"detail":"urls[0] is not an absolute URL"}`, 400, "", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/v1/sessions/s1/files/upload-urls" {
					http.NotFound(w, r)
					return
				}
				ct := "application/json"
				if tt.status != 200 {
					ct = "application/problem+json"
				}
				w.Header().Set("Content-Type", ct)
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			res, err := client.New(srv.URL, "sbx_test_0123456789", nil).UploadURLs(context.Background(), "s1", []string{"https://x/a"}, "")
			var p *client.Problem
			switch {
			case tt.problem != 0:
				if !errors.As(err, &p) || p.Status != tt.problem || p.Detail == "" {
					t.Fatalf("err = %v, want a %d problem", err, tt.problem)
				}
			case err != nil:
				t.Fatal(err)
			case res.Status != tt.want:
				t.Fatalf("status %q, want %q", res.Status, tt.want)
			}
		})
	}
}
