package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/blob"
	"github.com/sessionbox/sessionbox/pkg/bus"
	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// newLocalRuntimeManager runs the Manager on every real part: the local
// E2B-compatible runtime (or real E2B, see e2btest.Env) through the E2B adapter, the DynamoDB store and
// the S3 adapter on their emulators, and the system clock.
func newLocalRuntimeManager(t *testing.T, cfg session.Config) (*session.Manager, *sandboxes.E2B) {
	t.Helper()
	return newLocalRuntimeManagerWrapped(t, cfg, nil)
}

// newLocalRuntimeManagerWrapped is newLocalRuntimeManager with the blob
// adapter passed through wrap (when not nil), to count or inject faults.
func newLocalRuntimeManagerWrapped(t testing.TB, cfg session.Config, wrap func(session.Blobs) session.Blobs) (*session.Manager, *sandboxes.E2B) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	e2bCfg := e2btest.Config(t, func() e2b.Config {
		rt, err := e2blocal.Start(ctx, e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: t.TempDir()})
		if err != nil {
			t.Fatalf("start local runtime: %v", err)
		}
		t.Cleanup(func() { _ = rt.Close() })
		return e2b.Config{APIKey: "e2b_0123456789abcdef", APIURL: rt.APIURL(), SandboxURL: rt.SandboxURL()}
	})
	client, err := e2b.New(e2bCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	sbx := sandboxes.New(client)

	ddbURL, stopDDB, err := localaws.StartDynamoDB(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopDDB)
	ddb := localaws.DynamoDBClient(ddbURL)
	if err := store.CreateTable(ctx, ddb, "sessions"); err != nil {
		t.Fatal(err)
	}
	events := bus.NewLocal(1, func(context.Context, session.RunRequested) error { return nil }, nil)
	t.Cleanup(func() { _ = events.Close() })
	s3URL, stopS3, err := localaws.StartS3(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopS3)
	s3c := localaws.S3Client(s3URL)
	if err := localaws.EnsureBucket(ctx, s3c, "artifacts"); err != nil {
		t.Fatal(err)
	}
	cfg.StackID = e2btest.StackID(t)
	e2btest.KillTaggedAtCleanup(t, e2bCfg, map[string]string{session.MetaStack: cfg.StackID})
	var blobs session.Blobs = blob.New(s3c, "artifacts")
	if wrap != nil {
		blobs = wrap(blobs)
	}
	m, err := session.NewManager(cfg, session.Deps{
		Store: store.New(ddb, "sessions"), Sandboxes: sbx, Blobs: blobs, Bus: events,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	return m, sbx
}

// key is the session the tests of the Manager use.
var key = session.Key{Tenant: "acme", Principal: "alice", SessionID: "chat-1"}

func TestLocalRuntimeArtifactsAndRestart(t *testing.T) {
	m, sbx := newLocalRuntimeManager(t, session.Config{})
	ctx := t.Context()
	exec := func(code string) *session.ExecResult {
		t.Helper()
		res, err := m.Execute(ctx, key, session.ExecRequest{Code: code}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != nil {
			t.Fatalf("%s: %+v", code, res.Error)
		}
		return res
	}
	paths := func(res *session.ExecResult) string {
		var ps []string
		for _, a := range res.Artifacts {
			if a.DownloadURL == "" {
				t.Fatalf("artifact without URL: %+v", a)
			}
			ps = append(ps, a.Path)
		}
		return strings.Join(ps, ",")
	}

	// Files written by an execution come back; files from before, hidden
	// ones and ones outside the working directory do not.
	res := exec("open('before.txt','w').write('x')")
	if got := paths(res); got != "/home/user/before.txt" {
		t.Fatalf("first artifacts %q", got)
	}
	waitPastSkew(t, m, "/home/user/before.txt")
	res = exec("import os\nos.makedirs('.hidden', exist_ok=True)\nopen('.hidden/h.txt','w').write('h')\n" +
		"os.makedirs('out', exist_ok=True)\nopen('out/r.csv','w').write('a,b')\nopen('/tmp/t.txt','w').write('t')")
	if got := paths(res); got != "/home/user/out/r.csv" {
		t.Fatalf("second artifacts %q", got)
	}
	// After, with nothing written, nothing is reported again. A file
	// written within the allowed clock skew before an execution starts
	// counts for it (file times are coarse), so the next one starts past
	// that window.
	waitPastSkew(t, m, "/home/user/out/r.csv")
	if got := paths(exec("1 + 1")); got != "" {
		t.Fatalf("artifacts of an execution that wrote nothing: %q", got)
	}
	if got := paths(exec("open('before.txt','a').write('y')")); got != "/home/user/before.txt" {
		t.Fatalf("changed file: %q", got)
	}

	// State carries across executions; a sandbox killed behind our back is
	// replaced and the result says so.
	exec("counter = 41")
	if res := exec("counter + 1"); len(res.Results) == 0 || res.Results[0].Text != "42" {
		t.Fatalf("state lost: %+v", res.Results)
	}
	st, err := m.Status(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := sbx.Kill(ctx, st.SandboxID); err != nil {
		t.Fatal(err)
	}
	res, err = m.Execute(ctx, key, session.ExecRequest{Code: "'counter' in globals()"}, nil)
	if err != nil || !res.Restarted || len(res.Results) == 0 || res.Results[0].Text != "False" {
		t.Fatalf("after kill: %+v %v", res, err)
	}
}

// waitPastSkew waits until the clock is past p's modified time by more
// than the artifact clock skew, so an execution starting then cannot count
// p as its own.
func waitPastSkew(t *testing.T, m *session.Manager, p string) {
	t.Helper()
	es, err := m.ListFiles(t.Context(), key, path.Dir(p), 1)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(es, func(e session.FileEntry) bool { return e.Path == p })
	if i < 0 {
		t.Fatalf("%s not listed: %+v", p, es)
	}
	past := es[i].ModifiedAt.Add(m.Config().ArtifactClockSkew + time.Millisecond)
	for d := time.Until(past); d > 0; d = time.Until(past) {
		time.Sleep(d)
	}
}

// TestLocalRuntimeTenantCapUnderBurst starts many sessions of one tenant at
// once against the local runtime: they all pass the first count together,
// and exactly the cap's worth of sandboxes stays.
func TestLocalRuntimeTenantCapUnderBurst(t *testing.T) {
	const limit, starts = 4, 16
	m, sbx := newLocalRuntimeManager(t, session.Config{MaxLiveSandboxesPerTenant: limit})
	errs := make(chan error, starts)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Go(func() {
			k := session.Key{Tenant: "acme", Principal: "alice", SessionID: fmt.Sprint("burst-", i)}
			_, err := m.Start(t.Context(), k, session.StartOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	started := 0
	for err := range errs {
		switch {
		case err == nil:
			started++
		case !errors.Is(err, session.ErrLimit):
			t.Fatalf("start: %v", err)
		}
	}
	live, err := sbx.List(t.Context(), map[string]string{session.MetaTenant: "acme", session.MetaStack: m.Config().StackID})
	if err != nil {
		t.Fatal(err)
	}
	if started != limit || len(live) != limit {
		t.Fatalf("%d starts succeeded and %d sandboxes are live, want %d of each", started, len(live), limit)
	}
}
