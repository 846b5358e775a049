package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestClientUploadURLs runs local mode as `serve --allow-private-urls`
// does, so a loopback server's files land; cloud metadata stays refused.
func TestClientUploadURLs(t *testing.T) {
	t.Parallel()
	key, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc, err := local.Start(ctx, local.Config{DataDir: t.TempDir(), Keys: []local.Key{key},
		Session: session.Config{URLUploads: session.URLUploadConfig{AllowPrivate: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="notes.md"`)
		_, _ = io.WriteString(w, "# notes\n")
	}))
	defer origin.Close()
	c := client.New(svc.URL, key.Secret, nil)
	const sid = "client-urls"

	meta := "http://169.254.169.254/latest/meta-data/"
	res, err := c.UploadURLs(ctx, sid, []string{origin.URL + "/download?id=3", meta}, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != session.URLUploadPartialSuccess || len(res.Uploaded) != 1 || len(res.Errors) != 1 ||
		res.Uploaded[0].Path != "/home/user/docs/notes.md" || res.Uploaded[0].SizeBytes != 8 || res.Errors[0].SourceURL != meta {
		t.Fatalf("result %+v", res)
	}
	var buf strings.Builder
	if _, err := c.Download(ctx, sid, "docs/notes.md", &buf); err != nil || buf.String() != "# notes\n" {
		t.Fatalf("download: %q %v", buf.String(), err)
	}
	_, err = c.UploadURLs(ctx, sid, []string{"ftp://example.com/x"}, "")
	var p *client.Problem
	if !errors.As(err, &p) || p.Status != http.StatusBadRequest {
		t.Fatalf("an ftp URL: %v, want a 400 problem", err)
	}
}
