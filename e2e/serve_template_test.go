package e2e

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/local"
)

// TestServeTemplate runs the built `sessionbox serve --template
// my-tools=base`: a custom session naming that template starts and runs a
// command; one naming a template serve was not given does not.
func TestServeTemplate(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "sessionbox")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/sessionbox/sessionbox/cmd/sessionbox").CombinedOutput(); err != nil {
		t.Fatalf("build sessionbox: %v\n%s", err, out)
	}
	key, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var logs strings.Builder
	serve := exec.CommandContext(ctx, bin, "serve", "--addr", addr, "--data-dir", t.TempDir(),
		"--api-keys", "alice="+key.Secret, "--template", "my-tools=base")
	serve.Stdout, serve.Stderr = &logs, &logs
	serve.Cancel = func() error { return serve.Process.Signal(os.Interrupt) }
	serve.WaitDelay = 30 * time.Second
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	defer func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("serve's output:\n%s", logs.String())
		}
	}()
	c := client.New("http://"+addr, key.Secret, nil)
	for {
		if _, err := c.Health(ctx); err == nil {
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("serve ended before it was healthy: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}

	st, err := c.StartSandbox(ctx, "tpl", client.StartOptions{Type: "custom", Template: "my-tools"})
	if err != nil || st.State != "running" || st.Template != "my-tools" {
		t.Fatalf("start with --template's template: %+v %v", st, err)
	}
	res, err := c.RunCommand(ctx, "tpl", client.CommandRequest{Cmd: "echo from-my-tools"}, nil)
	if err != nil || res.ExitCode != 0 || res.Stdout != "from-my-tools\n" {
		t.Fatalf("command in the template's sandbox: %+v %v", res, err)
	}
	_, err = c.StartSandbox(ctx, "tpl-unknown", client.StartOptions{Type: "custom", Template: "not-given"})
	var p *client.Problem
	if !errors.As(err, &p) || p.Status < http.StatusBadRequest {
		t.Fatalf("start with a template serve was not given: %v", err)
	}
	t.Logf("a template serve was not given: %d %s", p.Status, p.Detail)
}
