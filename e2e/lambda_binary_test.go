package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/lambdaemu"
)

// buildBinary compiles a function the way `make build` does, for this
// machine's architecture.
func buildBinary(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-ldflags=-s -w", "-trimpath", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// runFunction starts bin under the Runtime API emulator with this
// process's environment (the stand-ins' variables included) and returns the
// emulator once the function asked for its first invocation.
func runFunction(t testing.TB, bin string) *lambdaemu.Emulator {
	t.Helper()
	emu, _ := runFunctionLogs(t, bin)
	return emu
}

// runFunctionLogs is runFunction that also returns the function's output
// as CloudWatch Logs would hold it: filtered by Lambda's log-level rule at
// the environment's AWS_LAMBDA_LOG_LEVEL (lambdaemu.LogFilter).
func runFunctionLogs(t testing.TB, bin string) (*lambdaemu.Emulator, *syncBuffer) {
	t.Helper()
	emu, err := lambdaemu.Start(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+emu.Addr(), "AWS_LAMBDA_FUNCTION_NAME=sessionbox-acme-execute")
	logs := &syncBuffer{}
	filtered := lambdaemu.LogFilter(logs, os.Getenv("AWS_LAMBDA_LOG_LEVEL"))
	cmd.Stdout, cmd.Stderr = filtered, filtered
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = filtered.Close()
		if t.Failed() {
			t.Logf("function output:\n%s", logs.String())
		}
	})
	select {
	case <-emu.Ready():
	case err := <-exited:
		exited <- err
		t.Fatalf("function exited during init: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("function never asked for an invocation")
	}
	return emu, logs
}

// TestExecuteBinaryStreams runs the real execute bootstrap under the
// Runtime API emulator against the stand-ins: the streaming wiring end to
// end, NDJSON and JSON, and a problem for bad input.
func TestExecuteBinaryStreams(t *testing.T) {
	bin := buildBinary(t, "../functions/execute")
	s := newLambdaStack(t)
	emu := runFunction(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	invoke := func(file string) answer {
		t.Helper()
		payload, err := os.ReadFile(filepath.Join(eventsDir, file))
		if err != nil {
			t.Fatal(err)
		}
		res, err := emu.Invoke(ctx, payload)
		if err != nil {
			t.Fatal(err)
		}
		if res.ErrorType != "" {
			t.Fatalf("%s: function error %s: %s", file, res.ErrorType, res.ErrorMessage)
		}
		if res.ContentType != "application/vnd.awslambda.http-integration-response" {
			t.Fatalf("%s: answered %q, not API Gateway's streaming format", file, res.ContentType)
		}
		return parseStreamed(t, res.Body)
	}
	a := invoke("execute/execute-missing-code.json")
	a.problem(t, http.StatusBadRequest)

	a = invoke("execute/execute-ndjson.json")
	a.ok(t, http.StatusOK)
	lines := ndjsonLines(t, a.body)
	if a.header.Get("Content-Type") != "application/x-ndjson" || len(lines) < 3 ||
		lines[0]["type"] != "start" || lines[1]["text"] != "hello\n" || lines[len(lines)-1]["type"] != "done" {
		t.Fatalf("NDJSON answer %s: %s", a.header, a.body)
	}

	a = invoke("execute/execute.json")
	a.ok(t, http.StatusOK)
	if r := a.json(t); r["success"] != true || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
		t.Fatalf("JSON answer: %s", a.body)
	}
	if n := s.secrets.Count(); n != 1 {
		t.Fatalf("the binary read the E2B key secret %d times, want once", n)
	}
}

// TestRunsBinaryReportsFailures runs the real runs bootstrap: a run that
// cannot be carried out is an invocation error carrying the reason, which
// is what Lambda's async retries and on-failure destination act on; a good
// event succeeds.
func TestRunsBinaryReportsFailures(t *testing.T) {
	bin := buildBinary(t, "../functions/runs")
	s := newLambdaStack(t)
	emu := runFunction(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	good, err := os.ReadFile(filepath.Join(eventsDir, "runs/run-requested.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := emu.Invoke(ctx, good)
	if err != nil || res.ErrorType != "" {
		t.Fatalf("good event: %+v (%v)", res, err)
	}
	if done := s.completed(t, "run-replay-0001"); len(done) != 1 || done[0].Status != "succeeded" {
		t.Fatalf("Run Completed %+v", done)
	}

	bad := bytes.Replace(good, []byte(`"sessionId": "pipeline-1"`), []byte(`"sessionId": "no such/session"`), 1)
	res, err = emu.Invoke(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorType == "" || !strings.Contains(res.ErrorMessage, "run-replay-0001") || !strings.Contains(res.ErrorMessage, "session") {
		t.Fatalf("bad event answered %+v, want an invocation error with the reason", res)
	}
}
