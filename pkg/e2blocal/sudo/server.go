//go:build linux

package sudo

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"syscall"
)

// Listen binds the agent's socket; call it before sandboxed code runs, so
// nothing else can take the name.
func Listen() (*net.UnixListener, error) {
	return net.ListenUnix("unixpacket", &net.UnixAddr{Name: SocketName, Net: "unixpacket"})
}

// Serve runs each request as root until ln is closed.
func Serve(ln *net.UnixListener) error {
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go handle(conn)
	}
}

func handle(conn *net.UnixConn) {
	defer conn.Close()
	buf := make([]byte, maxRequest)
	oob := make([]byte, syscall.CmsgSpace(3*4))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return
	}
	fds, err := parseFDs(oob[:oobn])
	files := make([]*os.File, 0, len(fds))
	for _, fd := range fds {
		files = append(files, os.NewFile(uintptr(fd), "sudo-stdio"))
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if err == nil && len(files) != 3 {
		err = errors.New("request must carry stdin, stdout and stderr")
	}
	var req request
	if err == nil {
		err = json.Unmarshal(buf[:n], &req)
	}
	if err == nil && len(req.Argv) == 0 {
		err = errors.New("empty command")
	}
	var cmd *exec.Cmd
	if err == nil {
		cmd, err = start(req, files)
	}
	if err != nil {
		_, _ = conn.Write(encode(reply{Error: err.Error()}))
		return
	}
	go forwardSignals(conn, cmd.Process.Pid)
	_ = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	_, _ = conn.Write(encode(reply{Exit: code}))
}

func start(req request, stdio []*os.File) (*exec.Cmd, error) {
	path, err := lookPath(req.Argv[0], req.Env)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: req.Argv, Env: req.Env, Dir: req.Dir,
		Stdin: stdio[0], Stdout: stdio[1], Stderr: stdio[2]}
	// Root inside the sandbox; its own process group, so a forwarded
	// signal reaches what it starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// forwardSignals delivers the client's signals to the command's group
// until the connection closes.
func forwardSignals(conn *net.UnixConn, pid int) {
	buf := make([]byte, 256)
	for {
		n, err := conn.Read(buf)
		if err != nil || n == 0 {
			return
		}
		var c control
		if json.Unmarshal(buf[:n], &c) == nil && c.Signal > 0 && c.Signal < 65 {
			_ = syscall.Kill(-pid, syscall.Signal(c.Signal))
		}
	}
}
