//go:build linux

package envd

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem/filesystemconnect"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process/processconnect"
)

// env is one real server on 127.0.0.1 with a temp dir as home.
type env struct {
	srv  *Server
	url  string
	home string
}

func newEnv(t testing.TB, mutate ...func(*Config)) *env {
	t.Helper()
	cfg := Config{User: "user", Home: t.TempDir(), Env: map[string]string{"GLOBAL": "g", "SHARED": "global"}}
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		// Server first: it ends the streams httptest would wait for.
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		hs.Close()
	})
	return &env{srv: srv, url: hs.URL, home: cfg.Home}
}

// codecs are the two Connect codecs every RPC test runs with.
var codecs = []struct {
	name string
	opts []connect.ClientOption
}{
	{"json", []connect.ClientOption{connect.WithProtoJSON()}},
	{"binary", nil},
}

func (e *env) proc(opts ...connect.ClientOption) processconnect.ProcessClient {
	return processconnect.NewProcessClient(http.DefaultClient, e.url, opts...)
}

func (e *env) fs(opts ...connect.ClientOption) filesystemconnect.FilesystemClient {
	return filesystemconnect.NewFilesystemClient(http.DefaultClient, e.url, opts...)
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startReq(cmd string, args ...string) *connect.Request[process.StartRequest] {
	no := false
	return connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{Cmd: cmd, Args: args}, Stdin: &no})
}

func sh(script string) *connect.Request[process.StartRequest] {
	return startReq("/bin/sh", "-c", script)
}

// result is a whole process stream, collected.
type result struct {
	pid        uint32
	kinds      []string
	stdout     string
	stderr     string
	pty        string
	keepalives int
	end        *process.ProcessEvent_EndEvent
}

type eventStream interface {
	Receive() bool
	Err() error
}

// collect reads a Start or Connect stream to its end, checking the order:
// start first, then data and keepalives, then exactly one end, last.
func collect(t testing.TB, s eventStream, event func() *process.ProcessEvent) (*result, error) {
	t.Helper()
	return collectInto(t, &result{}, s, event)
}

// collectInto continues collecting into r, whose start may have been read.
func collectInto(t testing.TB, r *result, s eventStream, event func() *process.ProcessEvent) (*result, error) {
	t.Helper()
	for s.Receive() {
		ev := event()
		if r.end != nil {
			t.Errorf("event after end: %v", ev)
		}
		switch {
		case ev.GetStart() != nil:
			if len(r.kinds) != 0 {
				t.Errorf("start event not first: %v", r.kinds)
			}
			r.pid = ev.GetStart().GetPid()
			r.kinds = append(r.kinds, "start")
		case ev.GetData() != nil:
			d := ev.GetData()
			r.stdout += string(d.GetStdout())
			r.stderr += string(d.GetStderr())
			r.pty += string(d.GetPty())
			r.kinds = append(r.kinds, "data")
		case ev.GetKeepalive() != nil:
			r.keepalives++
			r.kinds = append(r.kinds, "keepalive")
		case ev.GetEnd() != nil:
			r.end = ev.GetEnd()
			r.kinds = append(r.kinds, "end")
		default:
			t.Errorf("empty event")
		}
		if len(r.kinds) > 0 && r.kinds[0] != "start" {
			t.Errorf("first event is %s, want start", r.kinds[0])
		}
	}
	return r, s.Err()
}

func runStart(t testing.TB, ctx context.Context, c processconnect.ProcessClient, req *connect.Request[process.StartRequest]) (*result, error) {
	t.Helper()
	s, err := c.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return collect(t, s, func() *process.ProcessEvent { return s.Msg().GetEvent() })
}

func mustRun(t testing.TB, ctx context.Context, c processconnect.ProcessClient, req *connect.Request[process.StartRequest]) *result {
	t.Helper()
	r, err := runStart(t, ctx, c, req)
	if err != nil {
		t.Fatalf("Start stream: %v", err)
	}
	if r.end == nil {
		t.Fatalf("stream ended without end event: %v", r.kinds)
	}
	return r
}

func wantCode(t testing.TB, err error, code connect.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", code)
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != code {
		t.Fatalf("got error %v (code %v), want code %v", err, connect.CodeOf(err), code)
	}
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
