package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// countingBlobs counts the workspace bytes and objects put, and fails every
// Put after failAfter of them when failAfter is positive (a checkpoint cut
// off half way).
type countingBlobs struct {
	session.Blobs
	mu        sync.Mutex
	bytes     int64
	objects   []string
	failAfter atomic.Int64
	puts      atomic.Int64
	manifests atomic.Int64 // manifest reads
	// slowManifest, when positive, is how long each manifest read takes
	// (nanoseconds): a restore longer than the lease on any host.
	slowManifest atomic.Int64
}

func (c *countingBlobs) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if strings.HasSuffix(key, "/manifest.json") {
		c.manifests.Add(1)
		if d := time.Duration(c.slowManifest.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
		}
	}
	return c.Blobs.Open(ctx, key)
}

func (c *countingBlobs) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if n := c.failAfter.Load(); n > 0 && c.puts.Add(1) > n {
		return errors.New("injected: the bucket went away")
	}
	if strings.HasPrefix(key, "workspaces/") {
		c.mu.Lock()
		c.objects = append(c.objects, key[strings.LastIndexByte(key, '/')+1:])
		if !strings.HasSuffix(key, "manifest.json") {
			c.bytes += size
		}
		c.mu.Unlock()
	}
	return c.Blobs.Put(ctx, key, r, size, contentType)
}

// reset zeroes the counters and returns what they held.
func (c *countingBlobs) reset() (bytes int64, objects []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	bytes, objects = c.bytes, c.objects
	c.bytes, c.objects = 0, nil
	return bytes, objects
}

type wsRig struct {
	t     *testing.T
	m     *session.Manager
	sbx   *sandboxes.E2B
	blobs *countingBlobs
	key   session.Key
}

func newWSRig(t *testing.T, cfg session.Config, sid string) *wsRig {
	r := &wsRig{t: t, key: session.Key{Tenant: "acme", Principal: "alice", SessionID: sid}}
	r.m, r.sbx = newLocalRuntimeManagerWrapped(t, cfg, func(b session.Blobs) session.Blobs {
		r.blobs = &countingBlobs{Blobs: b}
		return r.blobs
	})
	return r
}

func (r *wsRig) exec(code string) *session.ExecResult {
	r.t.Helper()
	res, err := r.m.Execute(r.t.Context(), r.key, session.ExecRequest{Code: code, TimeoutSecs: 120}, nil)
	if err != nil {
		r.t.Fatalf("%s: %v", code, err)
	}
	if res.Error != nil {
		r.t.Fatalf("%s: %+v\n%s", code, res.Error, res.Stderr)
	}
	return res
}

func (r *wsRig) text(code string) string {
	r.t.Helper()
	res := r.exec(code)
	if len(res.Results) == 0 {
		r.t.Fatalf("%s: no result (stdout %q)", code, res.Stdout)
	}
	return strings.Trim(res.Results[0].Text, "'")
}

// installLocalWheel installs a wheel built here from an index served inside
// the sandbox (sandboxes have no network).
func (r *wsRig) installLocalWheel() {
	r.t.Helper()
	ctx := r.t.Context()
	name, wheel := buildWheel(r.t, "wsdemo", "1.0", "kept")
	if _, err := r.m.WriteFile(ctx, r.key, "/home/user/index/wsdemo/"+name, strings.NewReader(string(wheel))); err != nil {
		r.t.Fatal(err)
	}
	page := fmt.Sprintf(`<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>`, name, name)
	if _, err := r.m.WriteFile(ctx, r.key, "/home/user/index/wsdemo/index.html", strings.NewReader(page)); err != nil {
		r.t.Fatal(err)
	}
	r.exec("import subprocess, socket, sys, time\n" +
		"srv = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', '127.0.0.1', '--directory', '/home/user/index', '8766']," +
		" stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n" +
		"for _ in range(100):\n    try:\n        socket.create_connection(('127.0.0.1', 8766), 0.2).close(); break\n" +
		"    except OSError: time.sleep(0.05)\n")
	res, err := r.m.Install(ctx, r.key, session.InstallRequest{Packages: []string{"wsdemo==1.0"}, IndexURL: "http://127.0.0.1:8766/"}, nil)
	if err != nil || !res.Success {
		r.t.Fatalf("install: %+v %v", res, err)
	}
	r.exec("srv.kill(); srv.wait()")
}

// writeFiles leaves files of several kinds in the workspace: nested, binary,
// executable, empty, a symlink, an empty directory, and a cache that must
// not be kept.
const writeFiles = `
import os
os.makedirs('data/deep/er', exist_ok=True)
open('data/deep/er/notes.txt', 'w').write('hello workspace')
open('data/blob.bin', 'wb').write(bytes(range(256)) * 1000)
open('run.sh', 'w').write('#!/bin/sh\necho ran\n'); os.chmod('run.sh', 0o750)
open('empty.txt', 'w').close()
os.symlink('data/deep/er/notes.txt', 'link.txt')
os.makedirs('emptydir', exist_ok=True)
os.makedirs('.cache/pip', exist_ok=True); open('.cache/pip/big', 'w').write('cache')
`

// checkFiles is what a restored workspace must show.
const checkFiles = `
import os, stat
r = []
r.append(open('data/deep/er/notes.txt').read())
r.append(str(open('data/blob.bin', 'rb').read() == bytes(range(256)) * 1000))
r.append(oct(stat.S_IMODE(os.stat('run.sh').st_mode)))
r.append(str(os.path.getsize('empty.txt')))
r.append(os.readlink('link.txt'))
r.append(str(os.path.isdir('emptydir')))
r.append(str(os.path.exists('.cache/pip/big')))
'|'.join(r)
`

const wantFiles = "hello workspace|True|0o750|0|data/deep/er/notes.txt|True|False"

// TestWorkspaceSurvivesSandboxLoss writes files and installs a package,
// loses the sandbox in each way a session can, and runs again: the files
// and the package are back before the first call, and the result says so.
func TestWorkspaceSurvivesSandboxLoss(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		id   string
		cfg  session.Config
		lose func(t *testing.T, r *wsRig)
	}{
		{"stop", "stop", session.Config{}, func(t *testing.T, r *wsRig) {
			if _, err := r.m.Stop(t.Context(), r.key); err != nil {
				t.Fatal(err)
			}
		}},
		{"reaper idle kill", "reaped", session.Config{IdleTimeout: 3 * time.Second, ActivityWriteInterval: time.Second}, func(t *testing.T, r *wsRig) {
			testwait.Until(t, time.Minute, func() error {
				rep, err := r.m.Reap(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if rep.Killed != 1 {
					return fmt.Errorf("the reaper did not kill the idle sandbox: %+v", rep)
				}
				return nil
			})
		}},
		// E2B ends a sandbox at its plan's cap: the reaper checkpoints and
		// recycles the session before, and its next call restores.
		{"sandbox lifetime", "lifetime", session.Config{MaxSandboxLifetime: 30 * time.Second, IdleTimeout: 30 * time.Second,
			ActivityWriteInterval: time.Second}, func(t *testing.T, r *wsRig) {
			testwait.Until(t, time.Minute, func() error {
				rep, err := r.m.Reap(t.Context())
				if err != nil || rep.Killed != 0 {
					t.Fatalf("the reaper killed instead of recycling at the lifetime: %+v %v", rep, err)
				}
				if rep.Recycled != 1 {
					return fmt.Errorf("the reaper did not recycle the sandbox at its lifetime: %+v", rep)
				}
				return nil
			})
			if st, err := r.m.Status(t.Context(), r.key); err != nil || st.State != session.StateRunning {
				t.Fatalf("status after recycling: %+v %v", st, err)
			}
		}},
		{"killed behind the service's back", "killed", session.Config{}, func(t *testing.T, r *wsRig) {
			// Only a checkpoint taken before the loss can bring files back.
			if _, err := r.m.Checkpoint(t.Context(), r.key); err != nil {
				t.Fatal(err)
			}
			st, err := r.m.Status(t.Context(), r.key)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.sbx.Kill(t.Context(), st.SandboxID); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newWSRig(t, tc.cfg, "ws-"+tc.id)
			r.exec(writeFiles)
			r.installLocalWheel()
			tc.lose(t, r)

			res := r.exec("import wsdemo\nwsdemo.VALUE")
			if !res.Restarted || res.Restored == nil {
				t.Fatalf("restarted %v restored %+v", res.Restarted, res.Restored)
			}
			if len(res.Results) == 0 || strings.Trim(res.Results[0].Text, "'") != "kept" {
				t.Fatalf("package after restore: %+v %s", res.Results, res.Stderr)
			}
			if res.Restored.Files < 6 || res.Restored.Bytes < 256000 || res.Restored.CheckpointAt.IsZero() {
				t.Fatalf("restored %+v", res.Restored)
			}
			if got := r.text(checkFiles); got != wantFiles {
				t.Fatalf("files after restore:\n got %s\nwant %s", got, wantFiles)
			}
			st, err := r.m.Status(t.Context(), r.key)
			if err != nil {
				t.Fatal(err)
			}
			if st.LastCheckpoint.At.IsZero() || st.LastCheckpoint.Files != res.Restored.Files {
				t.Fatalf("status lastCheckpoint %+v, restored %+v", st.LastCheckpoint, res.Restored)
			}
			// The next call restores nothing: the sandbox is the same.
			if res := r.exec("1"); res.Restarted || res.Restored != nil {
				t.Fatalf("second call: restarted %v restored %+v", res.Restarted, res.Restored)
			}
		})
	}
}

// TestCheckpointCutOffHalfWay fails the bucket in the middle of a second
// checkpoint: the first stays whole and is what a fresh sandbox gets.
func TestCheckpointCutOffHalfWay(t *testing.T) {
	t.Parallel()
	r := newWSRig(t, session.Config{}, "ws-halfway")
	ctx := t.Context()
	r.exec("import os\nfor i in range(20): open(f'f{i}.txt', 'w').write(f'one {i}')")
	first, err := r.m.Checkpoint(ctx, r.key)
	if err != nil || first.Files != 20 {
		t.Fatalf("first checkpoint %+v %v", first, err)
	}
	r.exec("import os\nfor i in range(20): open(f'f{i}.txt', 'w').write(f'two {i}')\nopen('new.txt', 'w').write('new')")
	r.blobs.failAfter.Store(5)
	if _, err := r.m.Checkpoint(ctx, r.key); err == nil {
		t.Fatal("a checkpoint whose uploads failed succeeded")
	}
	r.blobs.failAfter.Store(0)
	st, err := r.m.Status(ctx, r.key)
	if err != nil {
		t.Fatal(err)
	}
	if !st.LastCheckpoint.At.Equal(first.At) {
		t.Fatalf("status names checkpoint %+v, want the first %+v", st.LastCheckpoint, first)
	}
	if err := r.sbx.Kill(ctx, st.SandboxID); err != nil {
		t.Fatal(err)
	}
	res := r.exec("import os\n','.join([open(f'f{i}.txt').read() for i in (0, 19)] + [str(os.path.exists('new.txt'))])")
	if res.Restored == nil || res.Restored.Files != 20 || !res.Restored.CheckpointAt.Equal(first.At) {
		t.Fatalf("restored %+v, want the first checkpoint %+v", res.Restored, first)
	}
	if got := strings.Trim(res.Results[0].Text, "'"); got != "one 0,one 19,False" {
		t.Fatalf("files after restore: %s", got)
	}
}

// TestCheckpointIsIncremental changes one 1 KB file of a 100 MB workspace:
// the second checkpoint uploads that file and the manifest, nothing else.
func TestCheckpointIsIncremental(t *testing.T) {
	t.Parallel()
	r := newWSRig(t, session.Config{}, "ws-incremental")
	ctx := t.Context()
	r.exec("import os\nos.makedirs('big', exist_ok=True)\n" +
		"for i in range(100): open(f'big/{i}.bin', 'wb').write(os.urandom(1 << 20))\n" +
		"open('small.txt', 'wb').write(os.urandom(1024))")
	first, err := r.m.Checkpoint(ctx, r.key)
	if err != nil {
		t.Fatal(err)
	}
	bytes1, objects1 := r.blobs.reset()
	if first.Files != 101 || bytes1 != 100<<20+1024 || len(objects1) != 102 {
		t.Fatalf("first checkpoint %+v uploaded %d bytes in %d objects", first, bytes1, len(objects1))
	}
	r.exec("import os\nopen('small.txt', 'wb').write(os.urandom(1024))")
	second, err := r.m.Checkpoint(ctx, r.key)
	if err != nil {
		t.Fatal(err)
	}
	bytes2, objects2 := r.blobs.reset()
	t.Logf("100 MB workspace, one 1 KB file changed: the second checkpoint uploaded %d bytes of files in %d objects (manifest included)", bytes2, len(objects2))
	if second.Files != 101 || bytes2 != 1024 || len(objects2) != 2 || objects2[1] != "manifest.json" {
		t.Fatalf("second checkpoint %+v uploaded %d bytes: %v", second, bytes2, objects2)
	}
}

// TestReaperCheckpointsAfterActivity: with no stop and no explicit call, the
// reaper checkpoints a session in use once CheckpointInterval has passed, so
// a sandbox lost without warning (a crash, serve killed) loses at most that
// interval of work.
func TestReaperCheckpointsAfterActivity(t *testing.T) {
	t.Parallel()
	r := newWSRig(t, session.Config{CheckpointInterval: time.Second, ActivityWriteInterval: 100 * time.Millisecond}, "ws-throttled")
	ctx := t.Context()
	r.exec("open('work.txt', 'w').write('unsaved?')")
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := r.m.Reap(ctx); err != nil {
			t.Fatal(err)
		}
		st, err := r.m.Status(ctx, r.key)
		if err != nil {
			t.Fatal(err)
		}
		if st.LastCheckpoint.Files == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after activity: %+v", st.LastCheckpoint)
		}
		time.Sleep(200 * time.Millisecond)
	}
	st, err := r.m.Status(ctx, r.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.sbx.Kill(ctx, st.SandboxID); err != nil {
		t.Fatal(err)
	}
	if got := r.text("open('work.txt').read()"); got != "unsaved?" {
		t.Fatalf("after the loss: %q", got)
	}
}

// TestCheckpointSizeCap: a workspace past the cap is not checkpointed; the
// call says why (429 through the API) and so does the session's status,
// until a checkpoint succeeds again.
func TestCheckpointSizeCap(t *testing.T) {
	t.Parallel()
	r := newWSRig(t, session.Config{MaxWorkspaceBytes: 100_000}, "ws-cap")
	ctx := t.Context()
	r.exec("import os\nopen('big.bin', 'wb').write(os.urandom(200_000))")
	_, err := r.m.Checkpoint(ctx, r.key)
	var se *session.Error
	if !errors.As(err, &se) || se.Kind != session.ErrLimit || !strings.Contains(se.Detail, "100000 bytes") {
		t.Fatalf("checkpoint past the cap: %v", err)
	}
	st, err := r.m.Status(ctx, r.key)
	if err != nil || !strings.Contains(st.CheckpointProblem, "100000 bytes") || !st.LastCheckpoint.At.IsZero() {
		t.Fatalf("status %+v %v", st, err)
	}
	r.exec("import os\nos.remove('big.bin')\nopen('.cache/x', 'w').write('y' * 200_000) if os.makedirs('.cache', exist_ok=True) is None else None")
	info, err := r.m.Checkpoint(ctx, r.key)
	if err != nil || info.Files != 0 {
		t.Fatalf("checkpoint under the cap (the cache left out): %+v %v", info, err)
	}
	if st, _ := r.m.Status(ctx, r.key); st.CheckpointProblem != "" || st.LastCheckpoint.At.IsZero() {
		t.Fatalf("status after a good checkpoint %+v", st)
	}
}

// TestRestoreLongerThanTheLease restores a workspace, its manifest read
// made to take 2.5 leases, while a second call waits for the session: one
// lease hold spans the sandbox's create and the restore, so the waiting
// call does not take the start over, and both calls find the files in the
// same sandbox. pkg/session's TestCreateLongerThanTheLease pins the
// create's part: a loaded host's slow create outlived the lease here, and
// the waiting call restored a second time.
func TestRestoreLongerThanTheLease(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	r := newWSRig(t, session.Config{LeaseDuration: lease}, "ws-long-restore")
	ctx := t.Context()
	r.exec("import os\nos.makedirs('many', exist_ok=True)\nfor i in range(1500): open(f'many/{i}.txt', 'w').write(str(i))")
	if _, err := r.m.Checkpoint(ctx, r.key); err != nil {
		t.Fatal(err)
	}
	st, err := r.m.Status(ctx, r.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.sbx.Kill(ctx, st.SandboxID); err != nil {
		t.Fatal(err)
	}
	r.blobs.manifests.Store(0)
	r.blobs.slowManifest.Store(int64(5 * lease / 2))
	var wg sync.WaitGroup
	results := make([]*session.ExecResult, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			results[i], errs[i] = r.m.Execute(ctx, r.key, session.ExecRequest{Code: "import os\nlen(os.listdir('many'))"}, nil)
		})
	}
	wg.Wait()
	restores := 0
	for i := range 2 {
		if errs[i] != nil || results[i].Error != nil || len(results[i].Results) == 0 || results[i].Results[0].Text != "1500" {
			t.Fatalf("call %d: %+v %v", i, results[i], errs[i])
		}
		if results[i].Restored != nil {
			restores++
		}
	}
	// One restore in all: a start taken over would restore again.
	if restores != 1 || r.blobs.manifests.Load() != 1 {
		t.Fatalf("%d calls report a restore, %d manifest reads; want one each", restores, r.blobs.manifests.Load())
	}
}
