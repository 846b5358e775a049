package e2e

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/local"
)

// TestWorkspaceThroughTheAPI checkpoints through the API, restarts the
// service on the same data dir (every sandbox gone), finds the files back,
// then deletes the session: its workspace goes with it.
func TestWorkspaceThroughTheAPI(t *testing.T) {
	t.Parallel()
	key, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start := func() (*local.Service, *client.Client) {
		svc, err := local.Start(ctx, local.Config{DataDir: dir, Keys: []local.Key{key}})
		if err != nil {
			t.Fatal(err)
		}
		return svc, client.New(svc.URL, key.Secret, nil)
	}
	const sid = "ws-api"
	text := func(c *client.Client, code string) string {
		t.Helper()
		res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: code}, nil)
		if err != nil || !res.Success || len(res.Results) == 0 {
			t.Fatalf("%s: %+v %v", code, res, err)
		}
		return res.Results[0].Text
	}

	svc, c := start()
	text(c, "open('kept.txt', 'w').write('across restarts')")
	info, err := c.Checkpoint(ctx, sid)
	if err != nil || info.Files != 1 || info.Bytes != int64(len("across restarts")) {
		t.Fatalf("checkpoint %+v %v", info, err)
	}
	st, err := c.Status(ctx, sid)
	if err != nil || st.LastCheckpoint == nil || !st.LastCheckpoint.At.Equal(info.At) {
		t.Fatalf("status %+v %v", st, err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}

	svc, c = start()
	defer svc.Close()
	res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "open('kept.txt').read()"}, nil)
	if err != nil || !res.Restarted || res.Restored == nil || res.Restored.Files != 1 || res.Results[0].Text != "across restarts" {
		t.Fatalf("after the restart: %+v %v", res, err)
	}

	if err := c.DeleteSession(ctx, sid); err != nil {
		t.Fatal(err)
	}
	var p *client.Problem
	if _, err := c.Status(ctx, sid); !errors.As(err, &p) || p.Status != http.StatusNotFound {
		t.Fatalf("status of a deleted session: %v", err)
	}
	if err := c.DeleteSession(ctx, sid); !errors.As(err, &p) || p.Status != http.StatusNotFound {
		t.Fatalf("deleting twice: %v", err)
	}
	// The id starts afresh: nothing comes back.
	res, err = c.Execute(ctx, sid, client.ExecuteRequest{Code: "import os\nos.path.exists('kept.txt')"}, nil)
	if err != nil || res.Restored != nil || res.Results[0].Text != "False" {
		t.Fatalf("after delete: %+v %v", res, err)
	}
}
