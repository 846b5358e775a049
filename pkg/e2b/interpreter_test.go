package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// interpSandbox attaches a sandbox whose interpreter is h.
func interpSandbox(t *testing.T, h http.Handler, tune func(*Config)) *Sandbox {
	t.Helper()
	srv := fakeServer(t, h)
	cfg := testConfig("http://127.0.0.1:1", srv.URL)
	if tune != nil {
		tune(&cfg)
	}
	return newTestClient(t, cfg).Attach("sbx1", AttachParams{AccessToken: "tok"})
}

func TestRunCodeParsesIncrementally(t *testing.T) {
	checkLeaks(t)
	sawStdout := make(chan struct{})
	var body executeBody
	var hdr http.Header
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr = r.Header.Clone()
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		write := func(s string) { _, _ = io.WriteString(w, s+"\n"); w.(http.Flusher).Flush() }
		write(`{"type":"number_of_executions","execution_count":4}`)
		write(`{"type":"stdout","text":"hello\n","timestamp":"2026-01-02T03:04:05.123456Z"}`)
		select { // the rest only exists once the client has handled the first line
		case <-sawStdout:
		case <-r.Context().Done():
			return
		}
		write(`{"type":"keepalive"}`)
		write(`{"type":"stderr","text":"warn\n","timestamp":"2026-01-02T03:04:06Z"}`)
		write(`{"type":"result","is_main_result":false,"png":"iVBOR","html":"<b>x</b>","markdown":"**x**","svg":"<svg/>","jpeg":"/9j/","pdf":"JVBE","latex":"$x$","json":{"a":1},"javascript":"1;","data":{"d":[1]},"chart":{"type":"line"},"extra":{"application/x-custom":"c"}}`)
		write(`{"type":"result","is_main_result":true,"text":"42"}`)
		write(`{"type":"error","name":"ValueError","value":"bad","traceback":"Traceback...\nValueError: bad"}`)
		write(`{"type": "end_of_execution"}`)
	})
	sb := interpSandbox(t, h, nil)
	var results, errs int
	exec, err := sb.RunCode(context.Background(), "print('hello')", RunCodeOptions{
		Language: "python", Envs: map[string]string{"K": "V"},
		OnStdout: func(m OutputMessage) {
			if m.Text == "hello\n" && m.Timestamp.Equal(time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)) {
				close(sawStdout)
			}
		},
		OnStderr: func(m OutputMessage) {
			if !m.IsStderr {
				t.Error("stderr message not marked")
			}
		},
		OnResult: func(Result) { results++ },
		OnError:  func(ExecutionError) { errs++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if body.Code != "print('hello')" || body.Language != "python" || body.EnvVars["K"] != "V" || body.ContextID != "" {
		t.Errorf("request = %+v", body)
	}
	if hdr.Get("E2b-Sandbox-Port") != "49999" || hdr.Get("X-Access-Token") != "tok" {
		t.Errorf("headers = %v", hdr)
	}
	if exec.ExecutionCount != 4 || exec.Text() != "42" || results != 2 || errs != 1 {
		t.Errorf("exec = %+v", exec)
	}
	if !reflect.DeepEqual(exec.Logs, Logs{Stdout: []string{"hello\n"}, Stderr: []string{"warn\n"}}) {
		t.Errorf("logs = %+v", exec.Logs)
	}
	if exec.Error == nil || exec.Error.Name != "ValueError" || exec.Error.Value != "bad" || !strings.Contains(exec.Error.Traceback, "\n") ||
		exec.Error.Error() != "ValueError: bad" {
		t.Errorf("error = %+v", exec.Error)
	}
	display := exec.Results[0]
	want := []string{"html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json", "javascript", "data", "chart", "application/x-custom"}
	if display.IsMainResult || !reflect.DeepEqual(display.Formats(), want) {
		t.Errorf("formats = %v", display.Formats())
	}
	if display.JSON.(map[string]any)["a"] != 1.0 || display.Chart["type"] != "line" {
		t.Errorf("display = %+v", display)
	}
}

func TestRunCodeTruncatedStream(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"type":"stdout","text":"partial","timestamp":"2026-01-02T03:04:05Z"}`+"\n")
	})
	exec, err := interpSandbox(t, h, nil).RunCode(context.Background(), "x", RunCodeOptions{})
	if !errors.Is(err, io.ErrUnexpectedEOF) || exec == nil || len(exec.Logs.Stdout) != 1 {
		t.Fatalf("exec = %+v, err = %v", exec, err)
	}
}

func TestRunCodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"unknown context", 404, "Context abc not found", ErrNotFound},
		{"bad request", 400, "context_id and language are mutually exclusive", ErrInvalidArgument},
		{"busy", 503, "busy", ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			_, err := interpSandbox(t, h, nil).RunCode(context.Background(), "1", RunCodeOptions{ContextID: "abc"})
			var e *Error
			if !errors.Is(err, tt.want) || !errors.As(err, &e) || e.Message != tt.body {
				t.Errorf("err = %v", err)
			}
			if hits.Load() != 1 {
				t.Errorf("RunCode sent %d times", hits.Load())
			}
		})
	}
	if _, err := interpSandbox(t, http.NotFoundHandler(), nil).RunCode(context.Background(), "1",
		RunCodeOptions{ContextID: "c", Language: "python"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("context and language: %v", err)
	}
}

func TestRunCodeTimeouts(t *testing.T) {
	checkLeaks(t)
	// Handlers drain the body: net/http only notices a client hang-up after that.
	slowHeaders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})
	sb := interpSandbox(t, slowHeaders, func(c *Config) { c.RequestTimeout = 30 * time.Millisecond })
	if _, err := sb.RunCode(context.Background(), "1", RunCodeOptions{}); !errors.Is(err, ErrTimeout) {
		t.Errorf("header timeout: %v", err)
	}
	// An interpreter that ignores the timeout: RunCode hangs up after the
	// grace and the output so far is the result.
	var sent executeBody
	slowBody := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&sent)
		_, _ = io.WriteString(w, `{"type":"stdout","text":"before\n","timestamp":"2024-01-01T00:00:00Z"}`+"\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	sb = interpSandbox(t, slowBody, nil)
	var live []string
	exec, err := sb.RunCode(context.Background(), "1", RunCodeOptions{Timeout: 30 * time.Millisecond, InterruptGrace: 20 * time.Millisecond,
		OnError: func(e ExecutionError) { live = append(live, e.Name) }})
	if err != nil || !exec.TimedOut || exec.Error == nil || exec.Error.Name != "TimeoutError" ||
		!strings.Contains(exec.Error.Value, "exceeded its timeout of 0.03 s") || strings.Join(exec.Logs.Stdout, "") != "before\n" {
		t.Errorf("execution timeout: %+v, %v", exec, err)
	}
	if sent.Timeout == nil || *sent.Timeout != 0.03 || !reflect.DeepEqual(live, []string{"TimeoutError"}) {
		t.Errorf("timeout sent %v, live errors %v", sent.Timeout, live)
	}
	// An interpreter that honours it ends the stream itself and says how.
	honours := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"type":"stdout","text":"partial","timestamp":"2024-01-01T00:00:00Z"}
{"type":"error","name":"TimeoutError","value":"exceeded","traceback":"","timed_out":true,"kernel_restarted":true}
{"type":"end_of_execution"}
`)
	})
	exec, err = interpSandbox(t, honours, nil).RunCode(context.Background(), "1", RunCodeOptions{Timeout: time.Second})
	if err != nil || !exec.TimedOut || !exec.KernelRestarted || exec.Error.Value != "exceeded" || exec.Logs.Stdout[0] != "partial" {
		t.Errorf("interpreter's timeout: %+v, %v", exec, err)
	}
	// A kernel found dead and replaced before the cell says so on the
	// count line; a plain count line does not.
	for _, c := range []struct {
		line string
		want bool
	}{
		{`{"type":"number_of_executions","execution_count":1,"kernel_restarted":true}`, true},
		{`{"type":"number_of_executions","execution_count":2}`, false},
	} {
		replaced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, c.line+"\n{\"type\":\"end_of_execution\"}\n")
		})
		exec, err = interpSandbox(t, replaced, nil).RunCode(context.Background(), "1", RunCodeOptions{})
		if err != nil || exec.KernelRestarted != c.want || exec.TimedOut || exec.ExecutionCount == 0 {
			t.Errorf("count line %s: %+v, %v", c.line, exec, err)
		}
	}
	// User code raising TimeoutError is no timeout of ours.
	raises := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"type":"error","name":"TimeoutError","value":"socket","traceback":""}
{"type":"end_of_execution"}
`)
	})
	exec, err = interpSandbox(t, raises, nil).RunCode(context.Background(), "1", RunCodeOptions{})
	if err != nil || exec.TimedOut || exec.Error.Name != "TimeoutError" {
		t.Errorf("code's own TimeoutError: %+v, %v", exec, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := sb.RunCode(ctx, "1", RunCodeOptions{Timeout: -1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v", err)
	}
}

func TestContexts(t *testing.T) {
	var calls []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls = append(calls, r.Method+" "+r.URL.Path+" "+string(b))
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/contexts":
			_, _ = io.WriteString(w, `{"id":"ctx1","language":"python","cwd":"/tmp"}`)
		case r.Method == http.MethodGet:
			_, _ = io.WriteString(w, `[{"id":"ctx1","language":"python","cwd":"/tmp"}]`)
		case strings.HasSuffix(r.URL.Path, "/missing"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "Context missing not found")
		default:
			_, _ = io.WriteString(w, "null")
		}
	})
	sb := interpSandbox(t, h, nil)
	ctx := context.Background()
	cc, err := sb.CreateContext(ctx, CreateContextOptions{Language: "python", Cwd: "/tmp"})
	if err != nil || *cc != (CodeContext{ID: "ctx1", Language: "python", Cwd: "/tmp"}) {
		t.Fatalf("create = %+v, %v", cc, err)
	}
	list, err := sb.ListContexts(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "ctx1" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if err := sb.RestartContext(ctx, "ctx1"); err != nil {
		t.Fatal(err)
	}
	if err := sb.RemoveContext(ctx, "ctx1"); err != nil {
		t.Fatal(err)
	}
	if err := sb.RemoveContext(ctx, "missing"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrSandboxNotFound) {
		t.Errorf("remove missing: %v", err)
	}
	want := []string{`POST /contexts {"cwd":"/tmp","language":"python"}`, `GET /contexts `, `POST /contexts/ctx1/restart `,
		`DELETE /contexts/ctx1 `, `DELETE /contexts/missing `}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("calls = %q", calls)
	}
}
