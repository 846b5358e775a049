package e2b_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
)

func newClient(t testing.TB) *e2b.Client {
	t.Helper()
	e2btest.NeedsSandboxes(t)
	c, err := e2b.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newSandbox creates a sandbox killed at cleanup.
func newSandbox(t testing.TB, c *e2b.Client, p e2b.CreateParams) *e2b.Sandbox {
	t.Helper()
	sb, err := c.Create(testCtx(t), p)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Kill(context.Background()); err != nil && !errors.Is(err, e2b.ErrSandboxNotFound) {
			t.Errorf("kill: %v", err)
		}
	})
	return sb
}

func TestLocalLifecycle(t *testing.T) {
	c := newClient(t)
	ctx := testCtx(t)
	tag := e2b.CreateParams{Template: "base", Timeout: 10 * time.Minute,
		Metadata: map[string]string{"suite": "lifecycle", "odd key": "a&b=c%"}, Envs: map[string]string{"GREETING": "hi"}}
	sb := newSandbox(t, c, tag)
	other := newSandbox(t, c, e2b.CreateParams{Metadata: map[string]string{"suite": "lifecycle"}})
	if sb.ID == "" || sb.EnvdVersion == "" || sb.AccessToken() == "" {
		t.Fatalf("sandbox = %+v", sb)
	}

	info, err := c.GetInfo(ctx, sb.ID)
	if err != nil || info.State != e2b.StateRunning || info.Metadata["odd key"] != "a&b=c%" || info.TemplateID != "base" {
		t.Fatalf("info = %+v, %v", info, err)
	}
	if left := time.Until(info.EndAt); left < 9*time.Minute || left > 11*time.Minute {
		t.Errorf("endAt in %v, want about 10m", left)
	}

	first, err := c.ListPage(ctx, e2b.ListParams{Metadata: map[string]string{"suite": "lifecycle"}, Limit: 1})
	if err != nil || len(first.Sandboxes) != 1 || first.NextToken == "" {
		t.Errorf("first page of 1 = %+v, %v", first, err)
	}
	var ids []string
	for s, err := range c.List(ctx, e2b.ListParams{Metadata: map[string]string{"suite": "lifecycle"}}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.SandboxID)
	}
	slices.Sort(ids)
	want := []string{sb.ID, other.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("list by metadata = %v, want %v", ids, want)
	}
	var odd []string
	for s, err := range c.List(ctx, e2b.ListParams{Metadata: map[string]string{"odd key": "a&b=c%"}, States: []e2b.SandboxState{e2b.StateRunning}, Template: "base"}) {
		if err != nil {
			t.Fatal(err)
		}
		odd = append(odd, s.SandboxID)
	}
	if !slices.Equal(odd, []string{sb.ID}) {
		t.Errorf("list by escaped metadata = %v", odd)
	}

	if err := sb.SetTimeout(ctx, 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	if info, _ := sb.Info(ctx); time.Until(info.EndAt) < 29*time.Minute {
		t.Errorf("SetTimeout not applied: endAt %v", info.EndAt)
	}
	if _, err := sb.Metrics(ctx, e2b.MetricsParams{}); err != nil {
		t.Errorf("metrics: %v", err)
	}

	if err := sb.Pause(ctx); err != nil {
		t.Fatalf("pause: %v", err)
	}
	if err := sb.Pause(ctx); !errors.Is(err, e2b.ErrConflict) {
		t.Errorf("second pause: %v, want ErrConflict", err)
	}
	if running, err := sb.IsRunning(ctx); running || err != nil {
		t.Errorf("paused sandbox IsRunning = %v, %v", running, err)
	}
	resumed, err := c.Connect(ctx, sb.ID, e2b.ConnectParams{Timeout: 5 * time.Minute})
	if err != nil || !resumed.Resumed {
		t.Fatalf("connect paused = %+v, %v", resumed, err)
	}
	again, err := c.Connect(ctx, sb.ID, e2b.ConnectParams{})
	if err != nil || again.Resumed {
		t.Fatalf("connect running = %+v, %v", again, err)
	}
	res, err := again.Commands().Run(ctx, "echo $GREETING", e2b.CommandOptions{})
	if err != nil || res.Stdout != "hi\n" {
		t.Fatalf("run after resume = %+v, %v", res, err)
	}

	if err := c.Kill(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(ctx, sb.ID); !errors.Is(err, e2b.ErrSandboxNotFound) {
		t.Errorf("second kill: %v", err)
	}
	if _, err := c.GetInfo(ctx, sb.ID); !errors.Is(err, e2b.ErrSandboxNotFound) {
		t.Errorf("info after kill: %v", err)
	}
	if _, err := sb.Files().Stat(ctx, "/", e2b.FileOptions{}); !errors.Is(err, e2b.ErrSandboxNotFound) {
		t.Errorf("envd after kill: %v", err)
	}
	if running, err := sb.IsRunning(ctx); running || err != nil {
		t.Errorf("killed sandbox IsRunning = %v, %v", running, err)
	}
}

func TestLocalAuthentication(t *testing.T) {
	e2btest.NeedsSandboxes(t)
	ctx := testCtx(t)
	wrongKey := target
	wrongKey.APIKey = "e2b_ffff"
	bad, err := e2b.New(wrongKey)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if sb, err := bad.Create(ctx, e2b.CreateParams{}); !errors.Is(err, e2b.ErrAuthentication) {
		t.Errorf("create with a wrong key: %v", err)
		if err == nil {
			_ = sb.Kill(ctx)
		}
	}
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	forged := c.Attach(sb.ID, e2b.AttachParams{AccessToken: "wrong"})
	if _, err := forged.Commands().List(ctx); !errors.Is(err, e2b.ErrAuthentication) {
		t.Errorf("envd with a wrong token: %v", err)
	}
	if _, err := c.Connect(ctx, "doesnotexist0000000", e2b.ConnectParams{}); !errors.Is(err, e2b.ErrSandboxNotFound) {
		t.Errorf("connect unknown: %v", err)
	}
}

func TestLocalInsecureSandbox(t *testing.T) {
	c := newClient(t)
	f := false
	sb := newSandbox(t, c, e2b.CreateParams{Secure: &f})
	if sb.AccessToken() != "" {
		t.Errorf("insecure sandbox has token %q", sb.AccessToken())
	}
	res, err := sb.Commands().Run(testCtx(t), "echo ok", e2b.CommandOptions{})
	if err != nil || res.Stdout != "ok\n" {
		t.Fatalf("run = %+v, %v", res, err)
	}
}

func TestLocalFiles(t *testing.T) {
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	ctx := testCtx(t)
	fs := sb.Files()

	big := make([]byte, 3<<20)
	_, _ = rand.Read(big)
	e, err := fs.Write(ctx, "data/big.bin", bytes.NewReader(big), e2b.WriteOptions{Metadata: map[string]string{"origin": "test"}})
	if err != nil || e.Path != "/home/user/data/big.bin" || e.Type != e2b.FileTypeFile {
		t.Fatalf("write = %+v, %v", e, err)
	}
	rc, err := fs.Read(ctx, "/home/user/data/big.bin", e2b.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	text := strings.Repeat("compressible line\n", 5000)
	if _, err := fs.Write(ctx, "t.txt", strings.NewReader(text), e2b.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, err := fs.ReadAll(ctx, "t.txt", e2b.ReadOptions{Gzip: true}); err != nil || string(b) != text {
		t.Fatalf("gzip read %d bytes, %v", len(b), err)
	}

	entries, err := fs.WriteFiles(ctx, []e2b.WriteEntry{{Path: "/home/user/m/a.txt", Data: strings.NewReader("A")},
		{Path: "m/sub/b.txt", Data: strings.NewReader("BB")}}, e2b.WriteOptions{})
	if err != nil || len(entries) != 2 {
		t.Fatalf("writeFiles = %+v, %v", entries, err)
	}
	if b, _ := fs.ReadAll(ctx, "m/sub/b.txt", e2b.ReadOptions{}); string(b) != "BB" {
		t.Errorf("multipart file = %q", b)
	}

	st, err := fs.Stat(ctx, "data/big.bin", e2b.FileOptions{})
	if err != nil || st.Size != int64(len(big)) || st.Owner != "user" || st.ModifiedTime.IsZero() || st.Metadata["origin"] != "test" {
		t.Errorf("stat = %+v, %v", st, err)
	}
	if ok, err := fs.Exists(ctx, "nope.txt", e2b.FileOptions{}); ok || err != nil {
		t.Errorf("exists(nope) = %v, %v", ok, err)
	}
	if created, err := fs.MakeDir(ctx, "newdir/x", e2b.FileOptions{}); !created || err != nil {
		t.Errorf("makeDir = %v, %v", created, err)
	}
	if created, err := fs.MakeDir(ctx, "newdir/x", e2b.FileOptions{}); created || err != nil {
		t.Errorf("makeDir existing = %v, %v", created, err)
	}
	moved, err := fs.Rename(ctx, "t.txt", "newdir/x/t2.txt", e2b.FileOptions{})
	if err != nil || moved.Path != "/home/user/newdir/x/t2.txt" {
		t.Errorf("rename = %+v, %v", moved, err)
	}
	list, err := fs.List(ctx, "newdir", e2b.ListOptions{Depth: 2})
	if err != nil || len(list) != 2 {
		t.Errorf("list depth 2 = %+v, %v", list, err)
	}
	if err := fs.Remove(ctx, "newdir", e2b.FileOptions{}); err != nil {
		t.Error(err)
	}
	if ok, _ := fs.Exists(ctx, "newdir", e2b.FileOptions{}); ok {
		t.Error("removed dir still exists")
	}
	if _, err := fs.Read(ctx, "missing.txt", e2b.ReadOptions{}); !errors.Is(err, e2b.ErrNotFound) || errors.Is(err, e2b.ErrSandboxNotFound) {
		t.Errorf("read missing: %v", err)
	}
	if _, err := fs.Read(ctx, "/home/user", e2b.ReadOptions{}); !errors.Is(err, e2b.ErrInvalidArgument) {
		t.Errorf("read dir: %v", err)
	}
	if _, err := fs.Stat(ctx, "missing", e2b.FileOptions{}); !errors.Is(err, e2b.ErrNotFound) {
		t.Errorf("stat missing: %v", err)
	}
	if b, err := fs.ReadAll(ctx, "m/a.txt", e2b.ReadOptions{User: "user"}); err != nil || string(b) != "A" {
		t.Errorf("read as user: %q, %v", b, err)
	}
	if _, err := fs.Read(ctx, "m/a.txt", e2b.ReadOptions{User: "nobody-here"}); !errors.Is(err, e2b.ErrAuthentication) {
		t.Errorf("read as unknown user: %v", err)
	}
}

// TestLocalWriteFilesOddNames checks that envd reads back exactly the path
// the client put in each multipart filename.
func TestLocalWriteFilesOddNames(t *testing.T) {
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	ctx := testCtx(t)
	fs := sb.Files()
	names := []string{"/home/user/odd/tab\there.txt", "/home/user/odd/café ünï.txt", `/home/user/odd/q"uo\te.txt`}
	var files []e2b.WriteEntry
	for i, n := range names {
		files = append(files, e2b.WriteEntry{Path: n, Data: strings.NewReader(strings.Repeat("x", i+1))})
	}
	entries, err := fs.WriteFiles(ctx, files, e2b.WriteOptions{})
	if err != nil || len(entries) != len(names) {
		t.Fatalf("writeFiles = %+v, %v", entries, err)
	}
	for i, n := range names {
		if entries[i].Path != n {
			t.Errorf("entry %d path = %q, want %q", i, entries[i].Path, n)
		}
		if b, err := fs.ReadAll(ctx, n, e2b.ReadOptions{}); err != nil || len(b) != i+1 {
			t.Errorf("read %q = %q, %v", n, b, err)
		}
	}
}

func TestLocalWatch(t *testing.T) {
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	ctx := testCtx(t)
	if _, err := sb.Files().MakeDir(ctx, "w", e2b.FileOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := sb.Files().Watch(ctx, "w", e2b.WatchOptions{Recursive: true, IncludeEntry: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := sb.Files().Write(ctx, "w/f.txt", strings.NewReader("x"), e2b.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if ev.Name == "f.txt" && (ev.Type == e2b.EventCreate || ev.Type == e2b.EventWrite) {
			break
		}
	}
	w.Close()
	if _, err := w.Next(); err == nil {
		t.Error("next after close returned an event")
	}
	if _, err := sb.Files().Watch(ctx, "no/such/dir", e2b.WatchOptions{}); !errors.Is(err, e2b.ErrNotFound) {
		t.Errorf("watch missing dir: %v", err)
	}
}

// TestLocalSignedURLs uses signed URLs the way a third party does: a plain
// GET or POST with no routing or access-token header.
func TestLocalSignedURLs(t *testing.T) {
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	other := newSandbox(t, c, e2b.CreateParams{})
	ctx := testCtx(t)
	check := func(name string, resp *http.Response, err error, status int, body string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status || (body != "" && string(b) != body) {
			t.Errorf("%s: %s %q, want %d %q", name, resp.Status, b, status, body)
		}
	}
	up, err := sb.UploadURL("/home/user/signed.txt", e2b.SignedURLOptions{Expires: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(up, "application/octet-stream", strings.NewReader("signed!"))
	check("signed upload", resp, err, http.StatusOK, "")
	down, err := sb.DownloadURL("/home/user/signed.txt", e2b.SignedURLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(down)
	check("signed download", resp, err, http.StatusOK, "signed!")
	if b, err := sb.Files().ReadAll(ctx, "signed.txt", e2b.ReadOptions{}); err != nil || string(b) != "signed!" {
		t.Errorf("uploaded file = %q, %v", b, err)
	}

	resp, err = http.Get(strings.Replace(down, "signature=v1_", "signature=v1_x", 1))
	check("tampered signature", resp, err, http.StatusUnauthorized, "")
	resp, err = http.Get(strings.Replace(down, "signed.txt", "other.txt", 1))
	check("signature of another path", resp, err, http.StatusUnauthorized, "")
	resp, err = http.Post(strings.Replace(up, "signature=v1_", "signature=v1_x", 1), "application/octet-stream", strings.NewReader("forged"))
	check("tampered upload", resp, err, http.StatusUnauthorized, "")
	// The same signed URL pointed at another sandbox fails: its token differs.
	resp, err = http.Get(strings.Replace(down, sb.ID, other.ID, 1))
	check("signature for another sandbox", resp, err, http.StatusUnauthorized, "")
	resp, err = http.Get(strings.Replace(down, sb.ID, "nosuchsandbox", 1))
	check("unknown sandbox", resp, err, http.StatusBadGateway, "")
}

func TestLocalCommands(t *testing.T) {
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{Envs: map[string]string{"GLOBAL": "g"}})
	ctx := testCtx(t)
	cmds := sb.Commands()

	var mu sync.Mutex
	var live []string
	res, err := cmds.Run(ctx, `echo "$GLOBAL $LOCAL $(pwd) $(whoami)"; echo err >&2`, e2b.CommandOptions{
		Envs: map[string]string{"LOCAL": "l"}, Cwd: "/tmp",
		OnStdout: func(b []byte) { mu.Lock(); live = append(live, string(b)); mu.Unlock() },
	})
	if err != nil || res.Stdout != "g l /tmp user\n" || res.Stderr != "err\n" || res.ExitCode != 0 {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if strings.Join(live, "") != res.Stdout {
		t.Errorf("callbacks saw %q", live)
	}
	res, err = cmds.Run(ctx, "exit 7", e2b.CommandOptions{})
	var exitErr *e2b.CommandExitError
	if !errors.As(err, &exitErr) || res.ExitCode != 7 || exitErr.Result.ExitCode != 7 {
		t.Errorf("exit 7: %+v, %v", res, err)
	}
	if res, err := cmds.Run(ctx, "whoami", e2b.CommandOptions{User: "user"}); err != nil || res.Stdout != "user\n" {
		t.Errorf("as user: %+v, %v", res, err)
	}

	h, err := cmds.Start(ctx, "cat", e2b.CommandOptions{Stdin: true, Tag: "cat"})
	if err != nil {
		t.Fatal(err)
	}
	procs, err := cmds.List(ctx)
	if err != nil || !slices.ContainsFunc(procs, func(p e2b.ProcessInfo) bool { return p.PID == h.PID && p.Tag == "cat" }) {
		t.Errorf("list = %+v, %v", procs, err)
	}
	if err := h.SendStdin(ctx, []byte("piped\n")); err != nil {
		t.Fatal(err)
	}
	if err := h.CloseStdin(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := h.Wait(ctx); err != nil || res.Stdout != "piped\n" {
		t.Errorf("cat = %+v, %v", res, err)
	}

	sleeper, err := cmds.Start(ctx, "sleep 60", e2b.CommandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := sleeper.Kill(ctx); !ok || err != nil {
		t.Errorf("kill = %v, %v", ok, err)
	}
	if res, err := sleeper.Wait(ctx); !errors.As(err, &exitErr) || res.ExitCode == 0 {
		t.Errorf("killed wait = %+v, %v", res, err)
	}
	if ok, err := cmds.Kill(ctx, 999999); ok || err != nil {
		t.Errorf("kill unknown = %v, %v", ok, err)
	}

	res, err = cmds.Run(ctx, "sleep 30", e2b.CommandOptions{Timeout: time.Second})
	if err == nil || res != nil && res.ExitCode == 0 {
		t.Errorf("timed-out command = %+v, %v", res, err)
	}
}

func TestLocalDisconnectReconnect(t *testing.T) {
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	ctx := testCtx(t)
	h, err := sb.Commands().Start(ctx, "echo one; sleep 1; echo two", e2b.CommandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.Disconnect()
	var mu sync.Mutex
	var live bytes.Buffer
	h2, err := sb.Commands().Connect(ctx, h.PID, e2b.ConnectOptions{OnStdout: func(b []byte) { mu.Lock(); live.Write(b); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h2.Wait(ctx)
	if err != nil || !strings.Contains(res.Stdout, "two\n") {
		t.Fatalf("reattached = %+v, %v", res, err)
	}
	// A finished process can still be connected to for its result.
	h3, err := sb.Commands().Connect(ctx, h.PID, e2b.ConnectOptions{})
	if err == nil {
		if res, err := h3.Wait(ctx); err != nil || res.ExitCode != 0 {
			t.Errorf("late connect = %+v, %v", res, err)
		}
	} else if !errors.Is(err, e2b.ErrNotFound) {
		t.Errorf("late connect: %v", err)
	}
	if _, err := sb.Commands().Connect(ctx, 999999, e2b.ConnectOptions{}); !errors.Is(err, e2b.ErrNotFound) {
		t.Errorf("connect unknown pid: %v", err)
	}
}

func TestLocalPty(t *testing.T) {
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	ctx := testCtx(t)
	var mu sync.Mutex
	var out bytes.Buffer
	seen := make(chan struct{})
	var once sync.Once
	h, err := sb.Pty().Create(ctx, e2b.PtyOptions{Cols: 100, Rows: 30, OnData: func(b []byte) {
		mu.Lock()
		out.Write(b)
		if strings.Contains(out.String(), "cols=120") {
			once.Do(func() { close(seen) })
		}
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Pty().Resize(ctx, h.PID, 120, 40); err != nil {
		t.Fatal(err)
	}
	if err := sb.Pty().SendInput(ctx, h.PID, []byte("echo cols=$(tput cols)\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-ctx.Done():
		mu.Lock()
		t.Fatalf("terminal output %q", out.String())
		mu.Unlock()
	}
	if ok, err := sb.Pty().Kill(ctx, h.PID); !ok || err != nil {
		t.Errorf("kill = %v, %v", ok, err)
	}
	if _, err := h.Wait(ctx); err == nil {
		t.Error("killed terminal exited cleanly")
	}
}

func TestLocalRunCode(t *testing.T) {
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{Template: "code-interpreter-v1", Envs: map[string]string{"SB_VAR": "global"}})
	ctx := testCtx(t)
	var stdout []string
	exec, err := sb.RunCode(ctx, "import os\nx = 41\nprint('hello', os.environ.get('SB_VAR'), os.environ.get('EXEC_VAR'))\nx + 1",
		e2b.RunCodeOptions{Envs: map[string]string{"EXEC_VAR": "mine"}, OnStdout: func(m e2b.OutputMessage) { stdout = append(stdout, m.Text) }})
	if err != nil {
		t.Fatal(err)
	}
	if exec.Text() != "42" || strings.Join(exec.Logs.Stdout, "") != "hello global mine\n" || strings.Join(stdout, "") != "hello global mine\n" ||
		exec.Error != nil || exec.ExecutionCount < 1 {
		t.Errorf("exec = %+v", exec)
	}
	exec, err = sb.RunCode(ctx, "x * 2", e2b.RunCodeOptions{})
	if err != nil || exec.Text() != "82" {
		t.Errorf("state kept: %+v, %v", exec, err)
	}
	var reported *e2b.ExecutionError
	exec, err = sb.RunCode(ctx, "import sys\nprint('to stderr', file=sys.stderr)\nraise ValueError('bad value')",
		e2b.RunCodeOptions{OnError: func(e e2b.ExecutionError) { reported = &e }})
	if err != nil || exec.Error == nil || exec.Error.Name != "ValueError" || exec.Error.Value != "bad value" ||
		!strings.Contains(exec.Error.Traceback, "ValueError") || reported == nil || len(exec.Logs.Stderr) == 0 {
		t.Errorf("exception = %+v, %v", exec, err)
	}

	cc, err := sb.CreateContext(ctx, e2b.CreateContextOptions{Cwd: "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	exec, err = sb.RunCode(ctx, "import os\nos.getcwd()", e2b.RunCodeOptions{ContextID: cc.ID})
	if err != nil || exec.Text() != "/tmp" {
		t.Errorf("context cwd = %+v, %v", exec, err)
	}
	if exec, err := sb.RunCode(ctx, "'x' in dir()", e2b.RunCodeOptions{ContextID: cc.ID}); err != nil || exec.Text() != "False" {
		t.Errorf("contexts are isolated: %+v, %v", exec, err)
	}
	list, err := sb.ListContexts(ctx)
	if err != nil || !slices.ContainsFunc(list, func(x e2b.CodeContext) bool { return x.ID == cc.ID }) {
		t.Errorf("contexts = %+v, %v", list, err)
	}
	if _, err := sb.RunCode(ctx, "y = 1", e2b.RunCodeOptions{ContextID: cc.ID}); err != nil {
		t.Fatal(err)
	}
	if err := sb.RestartContext(ctx, cc.ID); err != nil {
		t.Fatal(err)
	}
	if exec, err := sb.RunCode(ctx, "'y' in dir()", e2b.RunCodeOptions{ContextID: cc.ID}); err != nil || exec.Text() != "False" {
		t.Errorf("restart kept state: %+v, %v", exec, err)
	}
	if err := sb.RemoveContext(ctx, cc.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.RunCode(ctx, "1", e2b.RunCodeOptions{ContextID: cc.ID}); !errors.Is(err, e2b.ErrNotFound) {
		t.Errorf("removed context: %v", err)
	}
	if exec, err := sb.RunCode(ctx, "import time\nprint('before', flush=True)\ntime.sleep(30)", e2b.RunCodeOptions{Timeout: time.Second}); err != nil ||
		!exec.TimedOut || exec.KernelRestarted || exec.Error == nil || exec.Error.Name != "TimeoutError" || strings.Join(exec.Logs.Stdout, "") != "before\n" {
		t.Errorf("execution timeout: %+v, %v", exec, err)
	}
	if exec, err := sb.RunCode(ctx, "1 + 1", e2b.RunCodeOptions{Language: "python"}); err != nil || exec.Text() != "2" {
		t.Errorf("after timeout: %+v, %v", exec, err)
	}
}

// TestLocalPathRouting checks the local runtime's path form of routing,
// which signed URLs rely on, for the shapes a URL can take.
func TestLocalPathRouting(t *testing.T) {
	e2btest.LocalOnly(t, "routing by path is how the local runtime serves signed URLs")
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	ctx := testCtx(t)
	if _, err := sb.Files().Write(ctx, "dir with space/a%b.txt", strings.NewReader("escaped"), e2b.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	down, err := sb.DownloadURL("/home/user/dir with space/a%b.txt", e2b.SignedURLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := local.SandboxURL() + "/_sandboxes/" + sb.ID
	tests := []struct {
		name   string
		url    string
		header map[string]string
		status int
		body   string
	}{
		{"envd health", base + "/49983/health", nil, http.StatusNoContent, ""},
		{"interpreter port", base + "/49999/health", nil, http.StatusOK, ""},
		{"escaped query survives", down, nil, http.StatusOK, "escaped"},
		{"headers naming the same sandbox", down, map[string]string{"E2b-Sandbox-Id": sb.ID, "E2b-Sandbox-Port": "49983"}, http.StatusOK, "escaped"},
		{"port is not a number", base + "/envd/health", nil, http.StatusBadGateway, ""},
		{"no port", base, nil, http.StatusBadGateway, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tt.url, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || (tt.body != "" && string(b) != tt.body) {
				t.Errorf("GET %s: %s %q, want %d %q", tt.url, resp.Status, b, tt.status, tt.body)
			}
		})
	}
}
