package lambdaemu_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/lambdaemu"
)

// fnDir holds the test function, built once for the package's tests.
var fnDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lambdaemu-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fnDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// builtFn is the test function's binary, or the error building it.
var builtFn = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(fnDir, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, "./testdata/fn")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build test function: %w\n%s", err, out)
	}
	return bin, nil
})

// buildFn returns the test function, compiled by the first test to ask.
func buildFn(t *testing.T) string {
	t.Helper()
	bin, err := builtFn()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startFn runs bin against a fresh emulator; exited closes when the
// process ends.
func startFn(t *testing.T, bin string, env ...string) (emu *lambdaemu.Emulator, exited <-chan struct{}) {
	t.Helper()
	emu, err := lambdaemu.Start(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), append(env, "AWS_LAMBDA_RUNTIME_API="+emu.Addr())...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return emu, done
}

func TestEmulator(t *testing.T) {
	t.Parallel()
	bin := buildFn(t)
	emu, _ := startFn(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	select {
	case <-emu.Ready():
	case <-ctx.Done():
		t.Fatal("function never asked for work")
	}
	if emu.ReadyAt().IsZero() {
		t.Fatal("ReadyAt not recorded")
	}

	t.Run("buffered", func(t *testing.T) {
		res, err := emu.Invoke(ctx, []byte(`{"text":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		if err := json.Unmarshal(res.Body, &got); err != nil || got["echo"] != "hi" || res.ErrorType != "" {
			t.Fatalf("got %+v (%v)", res, err)
		}
	})
	t.Run("handler error", func(t *testing.T) {
		res, err := emu.Invoke(ctx, []byte(`{"action":"fail"}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.ErrorType == "" || !bytes.Contains(res.Body, []byte("failed on purpose")) {
			t.Fatalf("got %+v", res)
		}
	})
	t.Run("streamed", func(t *testing.T) {
		res, err := emu.Invoke(ctx, []byte(`{"action":"stream","text":"a,b,c"}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.ContentType != "application/vnd.awslambda.http-integration-response" {
			t.Fatalf("got %+v", res)
		}
		i := bytes.Index(res.Body, make([]byte, 8))
		if i < 0 || string(res.Body[i+8:]) != "a\nb\nc\n" {
			t.Fatalf("body %q", res.Body)
		}
	})
	t.Run("streamed failure midway", func(t *testing.T) {
		res, err := emu.Invoke(ctx, []byte(`{"action":"stream-fail"}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.ErrorType == "" || !bytes.Contains([]byte(res.ErrorMessage), []byte("broke midway")) {
			t.Fatalf("got %+v", res)
		}
	})
	t.Run("sequential invocations reuse the process", func(t *testing.T) {
		for i := range 5 {
			res, err := emu.Invoke(ctx, []byte(`{"text":"again"}`))
			if err != nil || !bytes.Contains(res.Body, []byte("again")) {
				t.Fatalf("invocation %d: %+v %v", i, res, err)
			}
		}
	})
}

func TestEmulatorInitError(t *testing.T) {
	t.Parallel()
	bin := buildFn(t)
	emu, exited := startFn(t, bin, "FAIL_INIT=1")
	// A panic during init ends the process before it asks for work; once
	// it is gone nobody can take the invocation, and the caller's deadline
	// ends it.
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("a function whose init panics kept running")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := emu.Invoke(ctx, []byte(`{}`)); err == nil {
		t.Fatal("want an error invoking a function that failed init")
	}
	select {
	case <-emu.Ready():
		t.Fatal("a function that failed init must not read as ready")
	default:
	}
}
