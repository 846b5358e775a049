//go:build linux

package envd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

func TestStartResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name       string
		req        func() *connect.Request[process.StartRequest]
		stdout     string
		stderr     string
		exitCode   int32
		exited     bool
		status     string
		errMessage string
	}{
		{"stdout", func() *connect.Request[process.StartRequest] { return sh("echo hello") }, "hello\n", "", 0, true, "exit status 0", ""},
		{"stderr and exit code", func() *connect.Request[process.StartRequest] { return sh("echo oops >&2; exit 3") }, "", "oops\n", 3, true, "exit status 3", "exit status 3"},
		{"killed by signal", func() *connect.Request[process.StartRequest] { return sh("kill -9 $$") }, "", "", -1, false, "signal: killed", "signal: killed"},
		{"env layering", func() *connect.Request[process.StartRequest] {
			r := sh(`echo "$GLOBAL $SHARED $REQ $USER $LOGNAME $HOME"`)
			r.Msg.Process.Envs = map[string]string{"SHARED": "request", "REQ": "r"}
			return r
		}, fmt.Sprintf("g request r user user %s\n", e.home), "", 0, true, "exit status 0", ""},
		{"default cwd is home", func() *connect.Request[process.StartRequest] { return startReq("pwd") }, e.home + "\n", "", 0, true, "exit status 0", ""},
		{"relative cwd", func() *connect.Request[process.StartRequest] {
			r := sh("mkdir -p sub && cd sub && pwd")
			return r
		}, filepath.Join(e.home, "sub") + "\n", "", 0, true, "exit status 0", ""},
		{"tilde cwd", func() *connect.Request[process.StartRequest] {
			r := startReq("pwd")
			cwd := "~"
			r.Msg.Process.Cwd = &cwd
			return r
		}, e.home + "\n", "", 0, true, "exit status 0", ""},
	}
	for _, codec := range codecs {
		c := e.proc(codec.opts...)
		for _, tc := range cases {
			t.Run(codec.name+"/"+tc.name, func(t *testing.T) {
				r := mustRun(t, testCtx(t), c, tc.req())
				if r.pid == 0 {
					t.Errorf("start pid is 0")
				}
				if r.stdout != tc.stdout || r.stderr != tc.stderr {
					t.Errorf("stdout %q stderr %q, want %q %q", r.stdout, r.stderr, tc.stdout, tc.stderr)
				}
				end := r.end
				if end.GetExitCode() != tc.exitCode || end.GetExited() != tc.exited || end.GetStatus() != tc.status || end.GetError() != tc.errMessage {
					t.Errorf("end = %v, want code %d exited %v status %q error %q", end, tc.exitCode, tc.exited, tc.status, tc.errMessage)
				}
			})
		}
	}
}

func TestStartBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	missingCwd := "does/not/exist"
	badTilde := "~root/x"
	cases := []struct {
		name string
		req  *process.StartRequest
		code connect.Code
	}{
		{"no process", &process.StartRequest{}, connect.CodeInvalidArgument},
		{"empty cmd", &process.StartRequest{Process: &process.ProcessConfig{}}, connect.CodeInvalidArgument},
		{"unknown binary", &process.StartRequest{Process: &process.ProcessConfig{Cmd: "/no/such/binary"}}, connect.CodeInvalidArgument},
		{"missing cwd", &process.StartRequest{Process: &process.ProcessConfig{Cmd: "pwd", Cwd: &missingCwd}}, connect.CodeInvalidArgument},
		{"other user's home", &process.StartRequest{Process: &process.ProcessConfig{Cmd: "pwd", Cwd: &badTilde}}, connect.CodeInvalidArgument},
	}
	for _, codec := range codecs {
		c := e.proc(codec.opts...)
		for _, tc := range cases {
			t.Run(codec.name+"/"+tc.name, func(t *testing.T) {
				_, err := runStart(t, testCtx(t), c, connect.NewRequest(tc.req))
				wantCode(t, err, tc.code)
				if tc.name == "missing cwd" && !strings.Contains(err.Error(), "cwd "+filepath.Join(e.home, missingCwd)+" is not a directory") {
					t.Errorf("missing cwd: %v", err)
				}
			})
		}
	}
}

func TestKeepalives(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			req := sh("sleep 0.6; echo done")
			req.Header().Set("Keepalive-Ping-Interval", "0.1")
			r := mustRun(t, testCtx(t), e.proc(codec.opts...), req)
			if r.keepalives < 2 {
				t.Errorf("got %d keepalives in %v, want >= 2", r.keepalives, r.kinds)
			}
			if r.stdout != "done\n" {
				t.Errorf("stdout %q", r.stdout)
			}
		})
	}
}

func TestTimeoutKillsProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.proc(connect.WithProtoJSON())
	marker := filepath.Join(e.home, "survived")
	req := sh("sleep 60; touch " + marker)
	// connect-go sends the context's deadline as Connect-Timeout-Ms, exactly
	// like the SDK's timeoutMs; long enough for the start on a loaded host.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := c.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := collect(t, s, func() *process.ProcessEvent { return s.Msg().GetEvent() })
	wantCode(t, err, connect.CodeDeadlineExceeded)
	if r.pid == 0 {
		t.Fatalf("no start event before the timeout: %v", r.kinds)
	}
	eventually(t, "process killed", func() bool { return !alive(int(r.pid)) })
	// The retained result says how it ended.
	cs, err := c.Connect(testCtx(t), connect.NewRequest(&process.ConnectRequest{Process: &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: r.pid}}}))
	if err != nil {
		t.Fatal(err)
	}
	late, err := collect(t, cs, func() *process.ProcessEvent { return cs.Msg().GetEvent() })
	if err != nil {
		t.Fatal(err)
	}
	if late.end.GetStatus() != "signal: killed" {
		t.Errorf("end after timeout = %v", late.end)
	}
}

func TestDisconnectKeepsProcessAndReconnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			c := e.proc(codec.opts...)
			gate := filepath.Join(t.TempDir(), "gate")
			tag := "job-" + codec.name
			req := sh(fmt.Sprintf("echo early; while [ ! -e %s ]; do sleep 0.02; done; echo late; echo err >&2; exit 4", gate))
			req.Msg.Tag = &tag
			ctx, cancel := context.WithCancel(testCtx(t))
			s, err := c.Start(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !s.Receive() || s.Msg().GetEvent().GetStart() == nil {
				t.Fatalf("first event: %v %v", s.Msg(), s.Err())
			}
			pid := s.Msg().GetEvent().GetStart().GetPid()
			if !s.Receive() || string(s.Msg().GetEvent().GetData().GetStdout()) != "early\n" {
				t.Fatalf("second event: %v %v", s.Msg(), s.Err())
			}
			cancel()
			_ = s.Close()
			// Still running after the client went away, and listed.
			time.Sleep(100 * time.Millisecond)
			if err := syscall.Kill(int(pid), 0); err != nil {
				t.Fatalf("process died with its client: %v", err)
			}
			list, err := c.List(testCtx(t), connect.NewRequest(&process.ListRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range list.Msg.GetProcesses() {
				if p.GetPid() == pid && p.GetTag() == tag && p.GetConfig().GetCmd() == "/bin/sh" {
					found = true
				}
			}
			if !found {
				t.Fatalf("pid %d not in List: %v", pid, list.Msg)
			}
			// The process finishes while nobody is connected.
			mustWrite(t, gate, "")
			eventually(t, "exit", func() bool { return !alive(int(pid)) })
			r := connectBy(t, c, &process.ProcessSelector{Selector: &process.ProcessSelector_Tag{Tag: tag}})
			if r.pid != pid || r.stdout != "late\n" || r.stderr != "err\n" || r.end.GetExitCode() != 4 {
				t.Errorf("late connect got pid %d stdout %q stderr %q end %v", r.pid, r.stdout, r.stderr, r.end)
			}
			// A second late Connect still gets start and end.
			r = connectBy(t, c, &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}})
			if strings.Join(r.kinds, ",") != "start,end" || r.end.GetExitCode() != 4 {
				t.Errorf("second late connect: %v %v", r.kinds, r.end)
			}
			list, err = c.List(testCtx(t), connect.NewRequest(&process.ListRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range list.Msg.GetProcesses() {
				if p.GetPid() == pid {
					t.Errorf("exited process still listed")
				}
			}
		})
	}
}

func connectBy(t *testing.T, c interface {
	Connect(context.Context, *connect.Request[process.ConnectRequest]) (*connect.ServerStreamForClient[process.ConnectResponse], error)
}, sel *process.ProcessSelector) *result {
	t.Helper()
	s, err := c.Connect(testCtx(t), connect.NewRequest(&process.ConnectRequest{Process: sel}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := collect(t, s, func() *process.ProcessEvent { return s.Msg().GetEvent() })
	if err != nil {
		t.Fatalf("connect stream: %v", err)
	}
	if r.end == nil {
		t.Fatalf("connect stream without end: %v", r.kinds)
	}
	return r
}

func TestUnknownProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: 999999}}
	tagSel := &process.ProcessSelector{Selector: &process.ProcessSelector_Tag{Tag: "nope"}}
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			c := e.proc(codec.opts...)
			ctx := testCtx(t)
			s, err := c.Connect(ctx, connect.NewRequest(&process.ConnectRequest{Process: sel}))
			if err == nil {
				_, err = collect(t, s, func() *process.ProcessEvent { return s.Msg().GetEvent() })
			}
			wantCode(t, err, connect.CodeNotFound)
			_, err = c.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{Process: tagSel, Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("x")}}}))
			wantCode(t, err, connect.CodeNotFound)
			_, err = c.SendSignal(ctx, connect.NewRequest(&process.SendSignalRequest{Process: sel, Signal: process.Signal_SIGNAL_SIGKILL}))
			wantCode(t, err, connect.CodeNotFound)
			_, err = c.CloseStdin(ctx, connect.NewRequest(&process.CloseStdinRequest{Process: sel}))
			wantCode(t, err, connect.CodeNotFound)
			_, err = c.Update(ctx, connect.NewRequest(&process.UpdateRequest{Process: sel}))
			wantCode(t, err, connect.CodeNotFound)
			_, err = c.SendSignal(ctx, connect.NewRequest(&process.SendSignalRequest{}))
			wantCode(t, err, connect.CodeInvalidArgument)
		})
	}
}

// startBackground starts req and returns its pid and the open stream.
func startBackground(t *testing.T, c interface {
	Start(context.Context, *connect.Request[process.StartRequest]) (*connect.ServerStreamForClient[process.StartResponse], error)
}, req *connect.Request[process.StartRequest]) (uint32, *connect.ServerStreamForClient[process.StartResponse]) {
	t.Helper()
	s, err := c.Start(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if !s.Receive() || s.Msg().GetEvent().GetStart() == nil {
		t.Fatalf("no start event: %v", s.Err())
	}
	return s.Msg().GetEvent().GetStart().GetPid(), s
}

func rest(t *testing.T, s *connect.ServerStreamForClient[process.StartResponse]) *result {
	t.Helper()
	r, err := collectInto(t, &result{kinds: []string{"start"}}, s, func() *process.ProcessEvent { return s.Msg().GetEvent() })
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if r.end == nil {
		t.Fatalf("no end event: %v", r.kinds)
	}
	return r
}

func TestStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			c := e.proc(codec.opts...)
			req := startReq("cat")
			yes := true
			req.Msg.Stdin = &yes
			pid, s := startBackground(t, c, req)
			sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
			for _, chunk := range []string{"hello ", "world\n"} {
				if _, err := c.SendInput(testCtx(t), connect.NewRequest(&process.SendInputRequest{Process: sel, Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte(chunk)}}})); err != nil {
					t.Fatalf("SendInput: %v", err)
				}
			}
			if _, err := c.CloseStdin(testCtx(t), connect.NewRequest(&process.CloseStdinRequest{Process: sel})); err != nil {
				t.Fatalf("CloseStdin: %v", err)
			}
			r := rest(t, s)
			if r.stdout != "hello world\n" || r.end.GetExitCode() != 0 {
				t.Errorf("cat got %q, end %v", r.stdout, r.end)
			}
		})
	}
}

func TestStdinDisabled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.proc()
	// stdin=false: the process reads EOF at once and input is refused.
	pid, s := startBackground(t, c, sh("cat; sleep 5"))
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	_, err := c.SendInput(testCtx(t), connect.NewRequest(&process.SendInputRequest{Process: sel, Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("x")}}}))
	wantCode(t, err, connect.CodeFailedPrecondition)
	if _, err := c.SendSignal(testCtx(t), connect.NewRequest(&process.SendSignalRequest{Process: sel, Signal: process.Signal_SIGNAL_SIGKILL})); err != nil {
		t.Fatal(err)
	}
	if r := rest(t, s); r.end.GetStatus() != "signal: killed" {
		t.Errorf("end %v", r.end)
	}
}

func TestStreamInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.proc()
	req := startReq("cat")
	yes := true
	req.Msg.Stdin = &yes
	pid, s := startBackground(t, c, req)
	in := c.StreamInput(testCtx(t))
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	msgs := []*process.StreamInputRequest{
		{Event: &process.StreamInputRequest_Start{Start: &process.StreamInputRequest_StartEvent{Process: sel}}},
		{Event: &process.StreamInputRequest_Data{Data: &process.StreamInputRequest_DataEvent{Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("streamed ")}}}}},
		{Event: &process.StreamInputRequest_Keepalive{Keepalive: &process.StreamInputRequest_KeepAlive{}}},
		{Event: &process.StreamInputRequest_Data{Data: &process.StreamInputRequest_DataEvent{Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("input\n")}}}}},
	}
	for _, m := range msgs {
		if err := in.Send(m); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	if _, err := in.CloseAndReceive(); err != nil {
		t.Fatalf("StreamInput: %v", err)
	}
	if _, err := c.CloseStdin(testCtx(t), connect.NewRequest(&process.CloseStdinRequest{Process: sel})); err != nil {
		t.Fatal(err)
	}
	if r := rest(t, s); r.stdout != "streamed input\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	// Data before start is refused.
	bad := c.StreamInput(testCtx(t))
	_ = bad.Send(msgs[1])
	_, err := bad.CloseAndReceive()
	wantCode(t, err, connect.CodeInvalidArgument)
}

func TestPTY(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			c := e.proc(codec.opts...)
			req := startReq("/bin/sh")
			req.Msg.Pty = &process.PTY{Size: &process.PTY_Size{Cols: 80, Rows: 24}}
			req.Msg.Process.Envs = map[string]string{"TERM": "xterm-256color"}
			pid, s := startBackground(t, c, req)
			sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
			if _, err := c.Update(testCtx(t), connect.NewRequest(&process.UpdateRequest{Process: sel, Pty: &process.PTY{Size: &process.PTY_Size{Cols: 120, Rows: 40}}})); err != nil {
				t.Fatalf("Update: %v", err)
			}
			input := "tty >/dev/null && echo is-a-tty; stty size; echo sum-$((40+2)); exit 5\n"
			if _, err := c.SendInput(testCtx(t), connect.NewRequest(&process.SendInputRequest{Process: sel, Input: &process.ProcessInput{Input: &process.ProcessInput_Pty{Pty: []byte(input)}}})); err != nil {
				t.Fatalf("SendInput: %v", err)
			}
			r := rest(t, s)
			for _, want := range []string{"is-a-tty", "40 120", "sum-42"} {
				if !strings.Contains(r.pty, want) {
					t.Errorf("pty output %q lacks %q", r.pty, want)
				}
			}
			if r.stdout != "" || r.stderr != "" || r.end.GetExitCode() != 5 {
				t.Errorf("stdout %q stderr %q end %v", r.stdout, r.stderr, r.end)
			}
		})
	}
}

func TestPTYOnlyOperations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.proc()
	req := startReq("sleep", "5")
	yes := true
	req.Msg.Stdin = &yes
	pid, _ := startBackground(t, c, req)
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	_, err := c.Update(testCtx(t), connect.NewRequest(&process.UpdateRequest{Process: sel, Pty: &process.PTY{Size: &process.PTY_Size{Cols: 1, Rows: 1}}}))
	wantCode(t, err, connect.CodeFailedPrecondition)
	_, err = c.SendInput(testCtx(t), connect.NewRequest(&process.SendInputRequest{Process: sel, Input: &process.ProcessInput{Input: &process.ProcessInput_Pty{Pty: []byte("x")}}}))
	wantCode(t, err, connect.CodeFailedPrecondition)
	_, err = c.SendInput(testCtx(t), connect.NewRequest(&process.SendInputRequest{Process: sel, Input: &process.ProcessInput{}}))
	wantCode(t, err, connect.CodeInvalidArgument)
}

func TestSignals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.proc(connect.WithProtoJSON())
	cases := []struct {
		name   string
		signal process.Signal
		code   connect.Code
		status string
	}{
		{"sigterm", process.Signal_SIGNAL_SIGTERM, 0, "signal: terminated"},
		{"sigkill", process.Signal_SIGNAL_SIGKILL, 0, "signal: killed"},
		{"unspecified", process.Signal_SIGNAL_UNSPECIFIED, connect.CodeInvalidArgument, ""},
		{"sigint", process.Signal(2), connect.CodeInvalidArgument, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A child in the background proves the whole group is signalled.
			childPid := filepath.Join(t.TempDir(), "child")
			pid, s := startBackground(t, c, sh(fmt.Sprintf("sleep 30 & echo $! > %s; wait", childPid)))
			eventually(t, "child pid file", func() bool { return fileHasNewline(childPid) })
			sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
			_, err := c.SendSignal(testCtx(t), connect.NewRequest(&process.SendSignalRequest{Process: sel, Signal: tc.signal}))
			if tc.code != 0 {
				wantCode(t, err, tc.code)
				_, _ = c.SendSignal(testCtx(t), connect.NewRequest(&process.SendSignalRequest{Process: sel, Signal: process.Signal_SIGNAL_SIGKILL}))
				rest(t, s)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := rest(t, s)
			if r.end.GetStatus() != tc.status || r.end.GetExitCode() != -1 || r.end.GetExited() {
				t.Errorf("end %v, want %s", r.end, tc.status)
			}
			child := readPid(t, childPid)
			eventually(t, "child killed with the group", func() bool { return !alive(child) })
		})
	}
}

func TestCloseKillsProcesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.proc()
	pid, s := startBackground(t, c, startReq("sleep", "30"))
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if !alive(int(pid)) {
		r := rest(t, s)
		if r.end.GetStatus() != "signal: killed" {
			t.Errorf("end %v", r.end)
		}
	} else {
		t.Fatalf("process %d survived Close", pid)
	}
	_, err := runStart(t, testCtx(t), c, startReq("true"))
	wantCode(t, err, connect.CodeUnavailable)
}

// A background child inheriting the output pipe must not hold back the
// end event: if it did, this test would hit its context deadline long
// before the child's 60 s sleep ends.
func TestBackgroundChildDoesNotHoldEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := mustRun(t, testCtx(t), e.proc(), sh("sleep 60 & echo $!"))
	child, err := strconv.Atoi(strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	defer syscall.Kill(child, syscall.SIGKILL)
	if r.end.GetExitCode() != 0 || !alive(child) {
		t.Errorf("end %v, child alive %v", r.end, alive(child))
	}
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	// A zombie still answers kill(0); check its state.
	st, err := readFileString(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(st, ')')
	return i < 0 || i+2 >= len(st) || st[i+2] != 'Z'
}

// Input to a process that never reads fills the pipe; the blocked write
// must give up with the request instead of wedging the process's input.
func TestBlockedStdinWriteIsInterrupted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.proc()
	req := startReq("sleep", "30")
	yes := true
	req.Msg.Stdin = &yes
	pid, s := startBackground(t, c, req)
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	big := make([]byte, 4<<20)
	_, err := c.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{Process: sel, Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: big}}}))
	wantCode(t, err, connect.CodeDeadlineExceeded)
	// The input lock was released: CloseStdin and a kill still go through.
	if _, err := c.CloseStdin(testCtx(t), connect.NewRequest(&process.CloseStdinRequest{Process: sel})); err != nil {
		t.Fatalf("CloseStdin after blocked write: %v", err)
	}
	if _, err := c.SendSignal(testCtx(t), connect.NewRequest(&process.SendSignalRequest{Process: sel, Signal: process.Signal_SIGNAL_SIGKILL})); err != nil {
		t.Fatal(err)
	}
	if r := rest(t, s); r.end.GetStatus() != "signal: killed" {
		t.Errorf("end %v", r.end)
	}
}
