package e2b

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem/filesystemconnect"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process/processconnect"
)

// fakeEnvd injects behaviour into envd's RPCs; unset hooks answer unimplemented.
type fakeEnvd struct {
	processconnect.UnimplementedProcessHandler
	filesystemconnect.UnimplementedFilesystemHandler
	start  func(context.Context, *connect.Request[process.StartRequest], *connect.ServerStream[process.StartResponse]) error
	stat   func(*connect.Request[filesystem.StatRequest]) error
	signal func(*connect.Request[process.SendSignalRequest]) error
	files  http.HandlerFunc

	mu      sync.Mutex
	headers []http.Header
	hits    atomic.Int32
}

func (f *fakeEnvd) Start(ctx context.Context, r *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
	return f.start(ctx, r, s)
}

func (f *fakeEnvd) Stat(_ context.Context, r *connect.Request[filesystem.StatRequest]) (*connect.Response[filesystem.StatResponse], error) {
	if err := f.stat(r); err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.StatResponse{Entry: &filesystem.EntryInfo{Name: "a", Path: r.Msg.Path, Type: filesystem.FileType_FILE_TYPE_FILE, Size: 5}}), nil
}

func (f *fakeEnvd) SendSignal(_ context.Context, r *connect.Request[process.SendSignalRequest]) (*connect.Response[process.SendSignalResponse], error) {
	if err := f.signal(r); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.SendSignalResponse{}), nil
}

func (f *fakeEnvd) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(processconnect.NewProcessHandler(f))
	mux.Handle(filesystemconnect.NewFilesystemHandler(f))
	mux.HandleFunc("/files", func(w http.ResponseWriter, r *http.Request) { f.files(w, r) })
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		f.mu.Lock()
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
}

func (f *fakeEnvd) lastHeader() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[len(f.headers)-1]
}

// envdSandbox attaches a sandbox to a fake envd reached through the sandbox URL.
func envdSandbox(t *testing.T, f *fakeEnvd, tune func(*Config)) *Sandbox {
	t.Helper()
	srv := fakeServer(t, f.handler())
	cfg := testConfig("http://127.0.0.1:1", srv.URL)
	if tune != nil {
		tune(&cfg)
	}
	return newTestClient(t, cfg).Attach("sbx1", AttachParams{AccessToken: "tok", TrafficAccessToken: "traffic"})
}

func TestEnvdHeaders(t *testing.T) {
	f := &fakeEnvd{stat: func(*connect.Request[filesystem.StatRequest]) error { return nil },
		files: func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello") }}
	sb := envdSandbox(t, f, nil)
	ctx := context.Background()
	if _, err := sb.Files().Stat(ctx, "/a", FileOptions{User: "root"}); err != nil {
		t.Fatal(err)
	}
	h := f.lastHeader()
	for k, want := range map[string]string{"E2b-Sandbox-Id": "sbx1", "E2b-Sandbox-Port": "49983", "X-Access-Token": "tok",
		"E2b-Traffic-Access-Token": "", "Authorization": "Basic cm9vdDo=", "Content-Type": "application/json"} {
		if got := h.Get(k); got != want {
			t.Errorf("RPC header %s = %q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(h.Get("User-Agent"), "e2b-go-sdk/") {
		t.Errorf("User-Agent = %q", h.Get("User-Agent"))
	}
	b, err := sb.Files().ReadAll(ctx, "/a", ReadOptions{})
	if err != nil || string(b) != "hello" {
		t.Fatalf("read = %q, %v", b, err)
	}
	if h := f.lastHeader(); h.Get("E2b-Sandbox-Id") != "sbx1" || h.Get("X-Access-Token") != "tok" || h.Get("Authorization") != "" {
		t.Errorf("REST headers = %v", h)
	}
}

// TestTrafficTokenOffEnvd: as E2B's SDKs do, the traffic token goes to
// every port but envd's (which takes the access token instead).
func TestTrafficTokenOffEnvd(t *testing.T) {
	var hdr http.Header
	srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "[]")
	}))
	sb := newTestClient(t, testConfig("http://127.0.0.1:1", srv.URL)).Attach("sbx1", AttachParams{AccessToken: "tok", TrafficAccessToken: "traffic"})
	if _, err := sb.ListContexts(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hdr.Get("E2b-Sandbox-Port") != "49999" || hdr.Get("E2b-Traffic-Access-Token") != "traffic" {
		t.Errorf("interpreter headers = %v", hdr)
	}
}

func TestBinaryRPCCodec(t *testing.T) {
	f := &fakeEnvd{stat: func(*connect.Request[filesystem.StatRequest]) error { return nil }}
	sb := envdSandbox(t, f, func(c *Config) { c.BinaryRPC = true })
	e, err := sb.Files().Stat(context.Background(), "/x", FileOptions{})
	if err != nil || e.Path != "/x" || e.Type != FileTypeFile || e.Size != 5 {
		t.Fatalf("stat = %+v, %v", e, err)
	}
	if ct := f.lastHeader().Get("Content-Type"); ct != "application/proto" {
		t.Errorf("content type = %s", ct)
	}
}

// goneHandler answers like E2B's proxy for an unknown sandbox.
func goneHandler(hits *atomic.Int32) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, `{"sandboxId":"sbx1","message":"The sandbox was not found","code":502}`)
	}
}

func TestSandboxGoneEverywhere(t *testing.T) {
	checkLeaks(t)
	var hits atomic.Int32
	srv := fakeServer(t, goneHandler(&hits))
	c := newTestClient(t, testConfig("http://127.0.0.1:1", srv.URL))
	sb := c.Attach("sbx1", AttachParams{})
	ctx := context.Background()
	calls := map[string]func() error{
		"stat": func() error { _, err := sb.Files().Stat(ctx, "/a", FileOptions{}); return err },
		"list": func() error { _, err := sb.Files().List(ctx, "/", ListOptions{}); return err },
		"read": func() error { _, err := sb.Files().Read(ctx, "/a", ReadOptions{}); return err },
		"write": func() error {
			_, err := sb.Files().Write(ctx, "/a", strings.NewReader("x"), WriteOptions{})
			return err
		},
		"run":       func() error { _, err := sb.Commands().Run(ctx, "true", CommandOptions{}); return err },
		"procs":     func() error { _, err := sb.Commands().List(ctx); return err },
		"watch":     func() error { _, err := sb.Files().Watch(ctx, "/", WatchOptions{}); return err },
		"runCode":   func() error { _, err := sb.RunCode(ctx, "1", RunCodeOptions{}); return err },
		"contexts":  func() error { _, err := sb.ListContexts(ctx); return err },
		"exists":    func() error { _, err := sb.Files().Exists(ctx, "/a", FileOptions{}); return err },
		"makeDir":   func() error { _, err := sb.Files().MakeDir(ctx, "/a", FileOptions{}); return err },
		"kill proc": func() error { _, err := sb.Commands().Kill(ctx, 1); return err },
		"remove":    func() error { return sb.Files().Remove(ctx, "/a", FileOptions{}) },
		"writeFiles": func() error {
			_, err := sb.Files().WriteFiles(ctx, []WriteEntry{{"/a", strings.NewReader("x")}}, WriteOptions{})
			return err
		},
	}
	for name, call := range calls {
		hits.Store(0)
		err := call()
		if !errors.Is(err, ErrSandboxNotFound) || !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrSandboxNotFound", name, err)
		}
		if hits.Load() != 1 {
			t.Errorf("%s: %d requests; a missing sandbox must not be retried", name, hits.Load())
		}
	}
	running, err := sb.IsRunning(ctx)
	if running || err != nil {
		t.Errorf("IsRunning = %v, %v", running, err)
	}
}

func TestEnvdRESTErrorMapping(t *testing.T) {
	tests := []struct {
		status int
		want   error
		not    error
	}{
		{404, ErrNotFound, ErrSandboxNotFound},
		{400, ErrInvalidArgument, nil},
		{401, ErrAuthentication, nil},
		{403, ErrPermissionDenied, ErrAuthentication},
		{507, ErrNotEnoughSpace, nil},
		{429, ErrRateLimited, nil},
		{502, ErrUnavailable, ErrSandboxNotFound},
	}
	for _, tt := range tests {
		f := &fakeEnvd{files: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tt.status)
			_, _ = io.WriteString(w, `{"message":"envd says no","code":`+itoa(tt.status)+`}`)
		}}
		sb := envdSandbox(t, f, func(c *Config) { c.Retry.MaxAttempts = 1 })
		_, rerr := sb.Files().Read(context.Background(), "/a", ReadOptions{})
		_, werr := sb.Files().Write(context.Background(), "/a", strings.NewReader("x"), WriteOptions{})
		for _, err := range []error{rerr, werr} {
			var e *Error
			if !errors.Is(err, tt.want) || (tt.not != nil && errors.Is(err, tt.not)) || !errors.As(err, &e) ||
				e.Message != "envd says no" || e.StatusCode != tt.status {
				t.Errorf("status %d: err = %v", tt.status, err)
			}
		}
	}
}

func TestRPCErrorMappingAndRetry(t *testing.T) {
	tests := []struct {
		code     connect.Code
		want     error
		wantHits int32
	}{
		{connect.CodeNotFound, ErrNotFound, 1},
		{connect.CodeInvalidArgument, ErrInvalidArgument, 1},
		{connect.CodeUnauthenticated, ErrAuthentication, 1},
		{connect.CodePermissionDenied, ErrPermissionDenied, 1},
		{connect.CodeResourceExhausted, ErrRateLimited, 3},
		{connect.CodeUnavailable, ErrUnavailable, 3},
		{connect.CodeAlreadyExists, ErrAlreadyExists, 1},
		{connect.CodeDeadlineExceeded, ErrTimeout, 1},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			f := &fakeEnvd{stat: func(*connect.Request[filesystem.StatRequest]) error {
				return connect.NewError(tt.code, errors.New("injected"))
			}}
			sb := envdSandbox(t, f, nil)
			_, err := sb.Files().Stat(context.Background(), "/a", FileOptions{})
			var e *Error
			if !errors.Is(err, tt.want) || !errors.As(err, &e) || e.Code != tt.code.String() || e.Message != "injected" {
				t.Errorf("err = %v", err)
			}
			if f.hits.Load() != tt.wantHits {
				t.Errorf("hits = %d, want %d", f.hits.Load(), tt.wantHits)
			}
		})
	}
}

func TestRPCRetryThenSuccess(t *testing.T) {
	var n atomic.Int32
	f := &fakeEnvd{stat: func(*connect.Request[filesystem.StatRequest]) error {
		if n.Add(1) < 3 {
			return connect.NewError(connect.CodeUnavailable, errors.New("busy"))
		}
		return nil
	}}
	sb := envdSandbox(t, f, nil)
	ok, err := sb.Files().Exists(context.Background(), "/a", FileOptions{})
	if !ok || err != nil || n.Load() != 3 {
		t.Fatalf("exists = %v, %v after %d calls", ok, err, n.Load())
	}
}

func TestExistsNotFound(t *testing.T) {
	f := &fakeEnvd{stat: func(*connect.Request[filesystem.StatRequest]) error {
		return connect.NewError(connect.CodeNotFound, errors.New("no such file"))
	}}
	ok, err := envdSandbox(t, f, nil).Files().Exists(context.Background(), "/nope", FileOptions{})
	if ok || err != nil {
		t.Fatalf("exists = %v, %v", ok, err)
	}
}

func startEvent(pid uint32) *process.StartResponse {
	return &process.StartResponse{Event: &process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: pid}}}}
}

func dataEvent(stdout, stderr string) *process.StartResponse {
	d := &process.ProcessEvent_DataEvent{Output: &process.ProcessEvent_DataEvent_Stdout{Stdout: []byte(stdout)}}
	if stderr != "" {
		d.Output = &process.ProcessEvent_DataEvent_Stderr{Stderr: []byte(stderr)}
	}
	return &process.StartResponse{Event: &process.ProcessEvent{Event: &process.ProcessEvent_Data{Data: d}}}
}

func endEvent(code int32, errText string) *process.StartResponse {
	end := &process.ProcessEvent_EndEvent{ExitCode: code, Exited: true, Status: "exit status " + itoa(int(code))}
	if errText != "" {
		end.Error = &errText
	}
	return &process.StartResponse{Event: &process.ProcessEvent{Event: &process.ProcessEvent_End{End: end}}}
}

func TestRunStreamsOutputLive(t *testing.T) {
	checkLeaks(t)
	gotFirst := make(chan struct{})
	var req *process.StartRequest
	var hdr http.Header
	f := &fakeEnvd{start: func(ctx context.Context, r *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
		req, hdr = r.Msg, r.Header()
		_ = s.Send(startEvent(42))
		_ = s.Send(dataEvent("first\n", ""))
		select { // the rest is only sent once the client has seen the first chunk
		case <-gotFirst:
		case <-ctx.Done():
			return ctx.Err()
		}
		_ = s.Send(&process.StartResponse{Event: &process.ProcessEvent{Event: &process.ProcessEvent_Keepalive{Keepalive: &process.ProcessEvent_KeepAlive{}}}})
		_ = s.Send(dataEvent("", "oops\n"))
		_ = s.Send(dataEvent("second\n", ""))
		return s.Send(endEvent(3, "exit status 3"))
	}}
	sb := envdSandbox(t, f, nil)
	var once sync.Once
	var stderr bytes.Buffer
	res, err := sb.Commands().Run(context.Background(), "echo hi", CommandOptions{
		Envs: map[string]string{"A": "1"}, Cwd: "/tmp", User: "root",
		OnStdout: func(b []byte) { once.Do(func() { close(gotFirst) }) },
		OnStderr: func(b []byte) { stderr.Write(b) },
	})
	var exitErr *CommandExitError
	if !errors.As(err, &exitErr) || exitErr.Result != res {
		t.Fatalf("err = %v", err)
	}
	if res.ExitCode != 3 || res.Stdout != "first\nsecond\n" || res.Stderr != "oops\n" || stderr.String() != "oops\n" || res.Error != "exit status 3" {
		t.Errorf("result = %+v", res)
	}
	if req.Process.Cmd != "/bin/bash" || strings.Join(req.Process.Args, " ") != "-l -c echo hi" || req.Process.GetCwd() != "/tmp" ||
		req.Process.Envs["A"] != "1" || req.Stdin == nil || *req.Stdin {
		t.Errorf("start request = %v", req)
	}
	if hdr.Get("Keepalive-Ping-Interval") != "50" || hdr.Get("Authorization") != "Basic cm9vdDo=" {
		t.Errorf("headers = %v", hdr)
	}
	if ms := hdr.Get("Connect-Timeout-Ms"); len(ms) < 4 || ms > "60000" {
		t.Errorf("Connect-Timeout-Ms = %q, want about 60000", ms)
	}
}

func TestCommandTimeoutHeader(t *testing.T) {
	var hdr http.Header
	f := &fakeEnvd{start: func(ctx context.Context, r *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
		hdr = r.Header()
		_ = s.Send(startEvent(1))
		return s.Send(endEvent(0, ""))
	}}
	sb := envdSandbox(t, f, nil)
	// A caller deadline must not become the process lifetime.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sb.Commands().Run(ctx, "true", CommandOptions{Timeout: -1}); err != nil {
		t.Fatal(err)
	}
	if v := hdr.Get("Connect-Timeout-Ms"); v != "" {
		t.Errorf("Connect-Timeout-Ms = %q with no command timeout", v)
	}
	if _, err := sb.Commands().Run(ctx, "true", CommandOptions{Timeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if v := hdr.Get("Connect-Timeout-Ms"); len(v) != 4 || v > "2000" {
		t.Errorf("Connect-Timeout-Ms = %q, want about 2000", v)
	}
}

func TestStartWithoutStartEvent(t *testing.T) {
	checkLeaks(t)
	f := &fakeEnvd{start: func(ctx context.Context, r *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
		return s.Send(dataEvent("x", ""))
	}}
	_, err := envdSandbox(t, f, nil).Commands().Start(context.Background(), "x", CommandOptions{})
	if err == nil || !strings.Contains(err.Error(), "expected start event") {
		t.Fatalf("err = %v", err)
	}
}

func TestStartHandshakeTimeout(t *testing.T) {
	checkLeaks(t)
	f := &fakeEnvd{start: func(ctx context.Context, r *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	sb := envdSandbox(t, f, func(c *Config) { c.RequestTimeout = 50 * time.Millisecond })
	_, err := sb.Commands().Start(context.Background(), "x", CommandOptions{})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if f.hits.Load() != 1 {
		t.Errorf("command start sent %d times", f.hits.Load())
	}
}

func TestStartNeverRetried(t *testing.T) {
	f := &fakeEnvd{start: func(ctx context.Context, r *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
		return connect.NewError(connect.CodeUnavailable, errors.New("busy"))
	}}
	sb := envdSandbox(t, f, nil)
	_, err := sb.Commands().Run(context.Background(), "x", CommandOptions{})
	if !errors.Is(err, ErrUnavailable) || f.hits.Load() != 1 {
		t.Fatalf("err = %v, hits = %d", err, f.hits.Load())
	}
}

func TestWaitCancelAndDisconnect(t *testing.T) {
	checkLeaks(t)
	serverDone := make(chan struct{})
	f := &fakeEnvd{start: func(ctx context.Context, r *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
		defer close(serverDone)
		_ = s.Send(startEvent(7))
		<-ctx.Done() // a process that never ends
		return nil
	}}
	sb := envdSandbox(t, f, nil)
	h, err := sb.Commands().Start(context.Background(), "sleep inf", CommandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.PID != 7 {
		t.Errorf("pid = %d", h.PID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrTimeout) {
		t.Errorf("wait = %v", err)
	}
	h.Disconnect()
	<-serverDone // the server saw the client go away
	if _, err := h.Wait(context.Background()); err == nil {
		t.Error("wait after disconnect returned no error")
	}
}

func TestRunCancelKillsProcess(t *testing.T) {
	checkLeaks(t)
	killed := make(chan uint32, 1)
	f := &fakeEnvd{
		start: func(ctx context.Context, r *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
			_ = s.Send(startEvent(9))
			_ = s.Send(dataEvent("running\n", ""))
			<-ctx.Done()
			return nil
		},
		signal: func(r *connect.Request[process.SendSignalRequest]) error {
			if r.Msg.Signal != process.Signal_SIGNAL_SIGKILL {
				return connect.NewError(connect.CodeInvalidArgument, errors.New("signal"))
			}
			killed <- r.Msg.Process.GetPid()
			return nil
		},
	}
	sb := envdSandbox(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The caller gives up once the command is known to run.
	_, err := sb.Commands().Run(ctx, "sleep inf", CommandOptions{OnStdout: func([]byte) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	select {
	case pid := <-killed:
		if pid != 9 {
			t.Errorf("killed pid %d", pid)
		}
	default:
		t.Error("cancelled Run did not kill the process")
	}
}

func TestKillUnknownProcess(t *testing.T) {
	f := &fakeEnvd{signal: func(*connect.Request[process.SendSignalRequest]) error {
		return connect.NewError(connect.CodeNotFound, errors.New("process not found"))
	}}
	ok, err := envdSandbox(t, f, nil).Commands().Kill(context.Background(), 123)
	if ok || err != nil {
		t.Fatalf("kill = %v, %v", ok, err)
	}
}

func TestReadIsStreamed(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	f := &fakeEnvd{files: func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "identity" {
			t.Errorf("Accept-Encoding = %q", r.Header.Get("Accept-Encoding"))
		}
		_, _ = io.WriteString(w, "head-")
		w.(http.Flusher).Flush()
		<-release // the tail is only produced after the client read the head
		_, _ = io.WriteString(w, "tail")
	}}
	rc, err := envdSandbox(t, f, nil).Files().Read(context.Background(), "/big", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 5)
	if _, err := io.ReadFull(rc, head); err != nil || string(head) != "head-" {
		t.Fatalf("head = %q, %v", head, err)
	}
	close(release)
	rest, err := io.ReadAll(rc)
	if err != nil || string(rest) != "tail" {
		t.Fatalf("rest = %q, %v", rest, err)
	}
}

func TestReadGzip(t *testing.T) {
	f := &fakeEnvd{files: func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding = %q", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, strings.Repeat("z", 10000))
		zw.Close()
	}}
	b, err := envdSandbox(t, f, nil).Files().ReadAll(context.Background(), "/z", ReadOptions{Gzip: true})
	if err != nil || string(b) != strings.Repeat("z", 10000) {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
}

func TestWriteIsStreamed(t *testing.T) {
	checkLeaks(t)
	gotHead := make(chan struct{})
	var query, ctype, meta string
	f := &fakeEnvd{files: func(w http.ResponseWriter, r *http.Request) {
		query, ctype, meta = r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("X-Metadata-Owner")
		head := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, head); err != nil {
			t.Error(err)
		}
		close(gotHead)
		rest, _ := io.ReadAll(r.Body)
		_ = json.NewEncoder(w).Encode([]EntryInfo{{Name: "f", Path: "/d/f", Type: FileTypeFile, Size: int64(5 + len(rest))}})
	}}
	sb := envdSandbox(t, f, nil)
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, "head-")
		<-gotHead // the server must see the head before the tail exists
		_, _ = io.WriteString(pw, "tail")
		pw.Close()
	}()
	e, err := sb.Files().Write(context.Background(), "/d/f", pr, WriteOptions{User: "user", Metadata: map[string]string{"owner": "me"}})
	if err != nil || e.Path != "/d/f" || e.Size != 9 {
		t.Fatalf("write = %+v, %v", e, err)
	}
	if query != "path=%2Fd%2Ff&username=user" || ctype != "application/octet-stream" || meta != "me" {
		t.Errorf("query %q type %q meta %q", query, ctype, meta)
	}
}

func TestWriteFilesMultipart(t *testing.T) {
	checkLeaks(t)
	got := map[string]string{}
	f := &fakeEnvd{files: func(w http.ResponseWriter, r *http.Request) {
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		var out []EntryInfo
		for {
			p, err := mr.NextRawPart()
			if err != nil {
				break
			}
			// Part.FileName strips directories; envd reads the raw header.
			_, dp, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
			b, _ := io.ReadAll(p)
			got[dp["name"]+":"+dp["filename"]] = string(b)
			out = append(out, EntryInfo{Path: dp["filename"], Type: FileTypeFile})
		}
		_ = json.NewEncoder(w).Encode(out)
	}}
	odd := "/home/user/tab\there é \"q\" back\\slash.txt"
	sb := envdSandbox(t, f, nil)
	entries, err := sb.Files().WriteFiles(context.Background(), []WriteEntry{
		{"/home/user/a.txt", strings.NewReader("A")}, {"rel/dir/b.txt", strings.NewReader("BB")}, {odd, strings.NewReader("C")}}, WriteOptions{})
	if err != nil || len(entries) != 3 {
		t.Fatalf("entries = %v, %v", entries, err)
	}
	if got["file:/home/user/a.txt"] != "A" || got["file:rel/dir/b.txt"] != "BB" || got["file:"+odd] != "C" {
		t.Errorf("parts = %q", got)
	}
	for _, bad := range []string{"/a\nb", "/a\rb"} {
		_, err := sb.Files().WriteFiles(context.Background(), []WriteEntry{{bad, strings.NewReader("x")}}, WriteOptions{})
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("path %q: err = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func TestWriteEmptyResponse(t *testing.T) {
	f := &fakeEnvd{files: func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "[]") }}
	_, err := envdSandbox(t, f, nil).Files().Write(context.Background(), "/a", nil, WriteOptions{})
	if err == nil || !strings.Contains(err.Error(), "no entries") {
		t.Fatalf("err = %v", err)
	}
}

// TestStartDetached: StartDetached asks envd to keep the output, returns
// the pid whether envd honours that (the start event alone) or streams as
// E2B's does, and leaves no goroutine behind.
func TestStartDetached(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream []*process.StartResponse
	}{
		{"start event alone", []*process.StartResponse{startEvent(7)}},
		{"streamed as E2B", []*process.StartResponse{startEvent(7), dataEvent("first\n", ""), endEvent(0, "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			var hdr http.Header
			f := &fakeEnvd{start: func(ctx context.Context, r *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
				hdr = r.Header()
				for _, ev := range tc.stream {
					if err := s.Send(ev); err != nil {
						return err
					}
				}
				return nil
			}}
			pid, err := envdSandbox(t, f, nil).Commands().StartDetached(context.Background(), "echo first", CommandOptions{Tag: "t"})
			if err != nil || pid != 7 {
				t.Fatalf("StartDetached = %d, %v", pid, err)
			}
			if hdr.Get(DetachHeader) != "true" || hdr.Get("Keepalive-Ping-Interval") == "" {
				t.Errorf("headers %v: want %s: true beside the usual ones", hdr, DetachHeader)
			}
		})
	}
}
