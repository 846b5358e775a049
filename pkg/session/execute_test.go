package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestActivityWritesThrottled(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{})
	exec := func() {
		t.Helper()
		if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		advance              time.Duration
		wantReads, wantWrite int64
	}{
		{time.Second, 1, 0},
		{10 * time.Second, 1, 0},
		{10 * time.Second, 1, 0},
		{10 * time.Second, 1, 1}, // 31s since the last write
		{5 * time.Second, 1, 0},
		{24 * time.Second, 1, 0}, // 29s since the last write
		{time.Second, 1, 1},
	}
	for i, st := range steps {
		r.clock.Advance(st.advance)
		r.store.reads.Store(0)
		r.store.writes.Store(0)
		timeouts := r.sbx.count("SetTimeout")
		exec()
		if got := r.store.reads.Load(); got != st.wantReads {
			t.Fatalf("step %d: reads %d, want %d", i, got, st.wantReads)
		}
		if got := r.store.writes.Load(); got != st.wantWrite {
			t.Fatalf("step %d: writes %d, want %d", i, got, st.wantWrite)
		}
		if got := int64(r.sbx.count("SetTimeout") - timeouts); got != st.wantWrite {
			t.Fatalf("step %d: timeout refreshes %d, want %d", i, got, st.wantWrite)
		}
	}
	s := r.store.session(testKey)
	if !s.LastActivityAt.Equal(r.clock.Now()) || !s.IdleDeadline.Equal(r.clock.Now().Add(30*time.Minute)) {
		t.Fatalf("activity not recorded: %+v", s)
	}
	if got := r.sbx.timeout[s.SandboxID]; got != 32*time.Minute {
		t.Fatalf("provider timeout %v", got)
	}
}

// TestActivityAfterCheckpointWritten: the first activity after a
// checkpoint is written at once, throttle or not, so the reaper sees the
// workspace changed since; later activity is throttled again.
func TestActivityAfterCheckpointWritten(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.m.cfg.DisableWorkspaces = false // no reaper runs here, so nothing walks the fake sandbox
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{})
	writes := func(step string, want int64) {
		t.Helper()
		r.clock.Advance(time.Second)
		r.store.writes.Store(0)
		if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "x"}, nil); err != nil {
			t.Fatal(err)
		}
		if got := r.store.writes.Load(); got != want {
			t.Fatalf("%s: %d writes, want %d", step, got, want)
		}
	}
	writes("activity soon after the start's write", 0)
	s := r.store.session(testKey)
	s.LastCheckpoint = CheckpointInfo{At: r.clock.Now(), Files: 1, Bytes: 1}
	r.store.put(s)
	writes("first activity after the checkpoint", 1)
	if got := r.store.session(testKey); !got.LastActivityAt.After(got.LastCheckpoint.At) || r.m.checkpointDue(got).IsZero() {
		t.Fatalf("no checkpoint due after recorded activity: %+v", got)
	}
	writes("activity after that, within the interval", 0)
}

func TestActivityWriteLosesToReaper(t *testing.T) {
	t.Parallel()
	// The reaper pauses the session between our read and our activity
	// write: the write fails, we re-read, and resume instead.
	r := newRig(t, Config{})
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
	r.clock.Advance(31 * time.Minute)
	var fired atomic.Bool
	r.store.fail = func(op string) error {
		if op == "UpdateSession" && fired.CompareAndSwap(false, true) {
			if _, err := r.m.Reap(ctx); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
	if err != nil || res.Stdout != "x\n" || res.Restarted {
		t.Fatalf("%+v %v", res, err)
	}
	if s := r.store.session(testKey); s.State != StateRunning || r.sbx.count("Pause") != 1 || r.sbx.count("Connect") != 1 {
		t.Fatalf("record %+v pauses %d connects %d", s, r.sbx.count("Pause"), r.sbx.count("Connect"))
	}
}

func TestOutputTruncation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		chunks        []string
		wantStreamed  string
		wantTruncated bool
	}{
		{"under", []string{"abc", "def"}, "abcdef", false},
		{"exact", []string{"abcde", "fghij"}, "abcdefghij", false},
		{"over in one", []string{"abcdefghijkl"}, "abcdefghij", true},
		{"over across", []string{"abcdef", "ghijkl", "mno"}, "abcdefghij", true},
		{"utf8 kept whole", []string{"abcdefghi", "é"}, "abcdefghi", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Config{MaxOutputBytes: 10})
			r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
				for _, c := range tt.chunks {
					onEvent(Event{Stdout: c})
					onEvent(Event{Stderr: c})
				}
				all := strings.Join(tt.chunks, "")
				return &ExecResult{Success: true, Stdout: all, Stderr: all}, nil
			}
			var mu sync.Mutex
			var out, errOut strings.Builder
			res, err := r.m.Execute(context.Background(), testKey, ExecRequest{Code: "x"}, func(e Event) {
				mu.Lock()
				defer mu.Unlock()
				out.WriteString(e.Stdout)
				errOut.WriteString(e.Stderr)
			})
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.wantStreamed || errOut.String() != tt.wantStreamed {
				t.Fatalf("streamed %q / %q, want %q", out.String(), errOut.String(), tt.wantStreamed)
			}
			if res.Stdout != tt.wantStreamed || res.Stderr != tt.wantStreamed || res.Truncated != tt.wantTruncated {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

func TestExecuteTimeout(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	var got ExecRequest
	r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
		got = req
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "x", TimeoutSecs: 7}, nil)
	if !errors.Is(err, ErrTimeout) || got.TimeoutSecs != 7 {
		t.Fatalf("err %v, provider got timeout %d", err, got.TimeoutSecs)
	}
	if _, err := r.m.Execute(context.Background(), testKey, ExecRequest{Code: "x", TimeoutSecs: 901}, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("timeout 901: %v", err)
	}
}

func TestArtifacts(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	// A file from before the execution is not an artifact.
	if _, err := r.m.WriteFile(ctx, testKey, "old.txt", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	code := "write /home/user/plot.png PNGDATA\nwrite /home/user/out/data.csv a,b\nwrite /home/user/.cache/x y\nwrite /home/user/a/b/deep.txt z\nwrite /tmp/elsewhere q"
	res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: code}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, a := range res.Artifacts {
		paths = append(paths, a.Path)
		if a.DownloadURL == "" {
			t.Fatalf("artifact without URL: %+v", a)
		}
	}
	if strings.Join(paths, ",") != "/home/user/out/data.csv,/home/user/plot.png" {
		t.Fatalf("artifacts %v", paths)
	}
	if res.Artifacts[1].MimeType != "image/png" || res.Artifacts[1].SizeBytes != 7 {
		t.Fatalf("artifact %+v", res.Artifacts[1])
	}
	key := strings.TrimPrefix(res.Artifacts[1].DownloadURL, "https://blobs.test/")
	if b, ok := r.blobs.object(key); !ok || string(b) != "PNGDATA" {
		t.Fatalf("blob %q %v", b, ok)
	}
	r.clock.Advance(time.Second)
	res, err = r.m.Execute(ctx, testKey, ExecRequest{Code: "print nothing"}, nil)
	if err != nil || len(res.Artifacts) != 0 {
		t.Fatalf("second execute %+v %v", res, err)
	}
}

func TestArtifactsCapped(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{MaxArtifacts: 2})
	var code strings.Builder
	for _, n := range []string{"c", "a", "d", "b"} {
		code.WriteString("write /home/user/" + n + ".txt x\n")
	}
	res, err := r.m.Execute(context.Background(), testKey, ExecRequest{Code: code.String()}, nil)
	if err != nil || len(res.Artifacts) != 2 || res.Artifacts[0].Path != "/home/user/a.txt" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestArtifactsSkippedWithoutBlobs(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	sbx := newFakeSandboxes(clock)
	m, err := NewManager(Config{}, Deps{Store: newFakeStore(clock), Sandboxes: sbx, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Execute(context.Background(), testKey, ExecRequest{Code: "write /home/user/a.txt x"}, nil)
	if err != nil || len(res.Artifacts) != 0 || sbx.count("ListFiles") != 0 {
		t.Fatalf("%+v %v lists %d", res, err, sbx.count("ListFiles"))
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "write /home/user/keep.txt 1"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.m.Reset(ctx, testKey); err != nil {
		t.Fatal(err)
	}
	res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
	if err != nil || res.ExecutionCount != 1 {
		t.Fatalf("after reset %+v %v", res, err)
	}
	s := r.store.session(testKey)
	if _, ok := r.sbx.file(s.SandboxID, "/home/user/keep.txt"); !ok {
		t.Fatal("reset lost files")
	}
}

func TestExecuteValidation(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	tests := []struct {
		name string
		key  Key
		req  ExecRequest
		kind error
	}{
		{"empty code", testKey, ExecRequest{}, ErrInvalid},
		{"bad session id", Key{Tenant: "a", Principal: "b", SessionID: "a/b"}, ExecRequest{Code: "x"}, ErrInvalid},
		{"no tenant", Key{Principal: "b", SessionID: "s"}, ExecRequest{Code: "x"}, ErrInvalid},
		{"hash in principal", Key{Tenant: "a", Principal: "b#P#c", SessionID: "s"}, ExecRequest{Code: "x"}, ErrInvalid},
		{"negative timeout", testKey, ExecRequest{Code: "x", TimeoutSecs: -1}, ErrInvalid},
		{"bad env name", testKey, ExecRequest{Code: "x", Envs: map[string]string{"A-B": "1"}}, ErrInvalid},
		{"bad context", testKey, ExecRequest{Code: "x", Context: "a b"}, ErrInvalid},
		{"huge code", testKey, ExecRequest{Code: strings.Repeat("x", maxCodeBytes+1)}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := r.m.Execute(ctx, tt.key, tt.req, nil); !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
		})
	}
	if r.sbx.count("Create") != 0 {
		t.Fatal("invalid input started a sandbox")
	}
}

func TestExecutionResultsBounded(t *testing.T) {
	t.Parallel()
	big := func(n int) string { return strings.Repeat("A", n) }
	many := func(n, size int) []Result {
		rs := make([]Result, n)
		for i := range rs {
			rs[i] = Result{Text: big(size)}
		}
		rs[n-1].IsMainResult = true
		return rs
	}
	tests := []struct {
		name          string
		res           ExecResult
		wantTruncated bool
		check         func(t *testing.T, res *ExecResult)
	}{
		{"within bounds", ExecResult{Results: []Result{{PNG: big(10 << 10)}, {Text: "42", IsMainResult: true}},
			Error: &ExecError{Name: "E", Value: "v", Traceback: "tb"}}, false, func(t *testing.T, res *ExecResult) {
			if len(res.Results) != 2 || len(res.Results[0].PNG) != 10<<10 || res.Error.Value != "v" {
				t.Fatalf("changed: %+v", res.Error)
			}
		}},
		{"huge exception", ExecResult{Error: &ExecError{Name: "ValueError", Value: big(1 << 20), Traceback: big(1 << 20)}}, true,
			func(t *testing.T, res *ExecResult) {
				if len(res.Error.Value) > maxErrorValueBytes || len(res.Error.Traceback) > 4<<10 || res.Error.Name != "ValueError" {
					t.Fatalf("error value %d traceback %d bytes", len(res.Error.Value), len(res.Error.Traceback))
				}
			}},
		{"largest results dropped first", ExecResult{Results: []Result{
			{PNG: big(40 << 10), Text: "<Figure>"}, {PNG: big(20 << 10)}, {HTML: big(5 << 10)}, {Text: "7", IsMainResult: true}}}, true,
			func(t *testing.T, res *ExecResult) {
				if len(res.Results) != 4 || res.Results[0].PNG != "" || res.Results[0].Text != "<Figure>" ||
					len(res.Results[1].PNG) != 20<<10 || res.Results[3].Text != "7" {
					t.Fatalf("results %d: first png %d text %q", len(res.Results), len(res.Results[0].PNG), res.Results[0].Text)
				}
			}},
		{"many small results", ExecResult{Results: many(2000, 100)}, true, func(t *testing.T, res *ExecResult) {
			last := res.Results[len(res.Results)-1]
			if len(res.Results) >= 2000 || !last.IsMainResult {
				t.Fatalf("%d results, main kept %v", len(res.Results), last.IsMainResult)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Config{MaxOutputBytes: 4 << 10, MaxResultBytes: 50 << 10})
			r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
				for i := range tt.res.Results {
					onEvent(Event{Result: &tt.res.Results[i]})
				}
				if tt.res.Error != nil {
					onEvent(Event{Error: tt.res.Error})
				}
				out := tt.res
				return &out, nil
			}
			var mu sync.Mutex
			streamed := 0
			res, err := r.m.Execute(context.Background(), testKey, ExecRequest{Code: "x"}, func(e Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Result != nil {
					streamed += jsonSize(e.Result)
				}
				if e.Error != nil && len(e.Error.Value)+len(e.Error.Traceback) > maxErrorValueBytes+4<<10 {
					t.Errorf("streamed an error of %d bytes", len(e.Error.Value)+len(e.Error.Traceback))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Truncated != tt.wantTruncated {
				t.Fatalf("truncated %v, want %v", res.Truncated, tt.wantTruncated)
			}
			if n := jsonSize(res.Results); n > 50<<10 {
				t.Fatalf("results of %d bytes past the 50 KB budget", n)
			}
			if streamed > 50<<10 {
				t.Fatalf("streamed %d bytes of results past the budget", streamed)
			}
			tt.check(t, res)
		})
	}
}

// TestResetStartsNothing: reset follows the rule for calls that do not
// create a session: an unknown session is 404 naming it, and a session
// without a sandbox has nothing to reset; neither starts a sandbox.
func TestResetStartsNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		prepare func(t *testing.T, r *rig)
		wantErr string
	}{
		{"unknown session", func(*testing.T, *rig) {}, `session "chat-1" not found`},
		{"stopped session", func(t *testing.T, r *rig) {
			r.mustStart(t, context.Background(), testKey, StartOptions{})
			if _, err := r.m.Stop(context.Background(), testKey); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"sandbox gone", func(t *testing.T, r *rig) {
			s := r.mustStart(t, context.Background(), testKey, StartOptions{})
			r.sbx.vanish(s.SandboxID)
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Config{})
			c.prepare(t, r)
			creates := r.sbx.count("Create")
			err := r.m.Reset(context.Background(), testKey)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (!errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err = %v, want %q", err, c.wantErr)
			}
			if r.sbx.count("Create") != creates {
				t.Errorf("reset started a sandbox: creates %d→%d", creates, r.sbx.count("Create"))
			}
		})
	}
}
