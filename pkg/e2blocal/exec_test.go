//go:build linux

package e2blocal

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process/processconnect"
)

// routedClient adds the routing and auth headers the SDKs send.
type routedClient struct {
	id, token string
}

func (c routedClient) header(h http.Header) {
	h.Set(hdrSandboxID, c.id)
	h.Set(hdrSandboxPort, "49983")
	if c.token != "" {
		h.Set("X-Access-Token", c.token)
	}
}

type cmdResult struct {
	stdout, stderr string
	exit           int32
	err            error
}

// runIn runs a bash script in the sandbox through envd's process service,
// routed by the runtime's sandbox address, as the SDKs do.
func runIn(ctx context.Context, rt *Runtime, sb sandboxBody, script string) cmdResult {
	return runStalled(ctx, rt, sb, script, func() {})
}

// smallWindowClient reads through a fixed 64 KiB socket receive buffer.
// The kernel's autotuning (up to tcp_rmem's maximum, 32 MiB on some hosts)
// would otherwise hold much of a flood for a reader that has stopped,
// hiding how much the runtime itself queues.
var smallWindowClient = &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
	Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
		}); cerr != nil {
			return cerr
		}
		return err
	},
}).DialContext}}

// runStalled is runIn with a reader that stops reading after the start
// event until stall returns, as a slow client would.
func runStalled(ctx context.Context, rt *Runtime, sb sandboxBody, script string, stall func()) cmdResult {
	return runCmd(ctx, rt, sb, "user", script, stall)
}

// runCmd runs a bash login script as the named sandbox user through envd,
// calling stall after the start event, and collects its output and end.
func runCmd(ctx context.Context, rt *Runtime, sb sandboxBody, user, script string, stall func()) cmdResult {
	client := processconnect.NewProcessClient(smallWindowClient, rt.SandboxURL())
	req := connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{
		Cmd: "/bin/bash", Args: []string{"-l", "-c", script},
	}})
	routedClient{sb.SandboxID, sb.EnvdAccessToken}.header(req.Header())
	req.Header().Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":")))
	stream, err := client.Start(ctx, req)
	if err != nil {
		return cmdResult{err: err}
	}
	defer stream.Close()
	var out, errOut strings.Builder
	for n := 0; stream.Receive(); n++ {
		if n == 0 {
			stall()
		}
		ev := stream.Msg().GetEvent()
		if d := ev.GetData(); d != nil {
			out.Write(d.GetStdout())
			errOut.Write(d.GetStderr())
		}
		if end := ev.GetEnd(); end != nil {
			return cmdResult{stdout: out.String(), stderr: errOut.String(), exit: end.GetExitCode()}
		}
	}
	return cmdResult{stdout: out.String(), stderr: errOut.String(), err: stream.Err()}
}

// mustRun runs script and fails the test unless it exits 0.
func mustRun(t testing.TB, rt *Runtime, sb sandboxBody, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := runIn(ctx, rt, sb, script)
	if r.err != nil || r.exit != 0 {
		t.Fatalf("run %q: exit %d err %v\nstdout: %s\nstderr: %s", script, r.exit, r.err, r.stdout, r.stderr)
	}
	return r.stdout
}
