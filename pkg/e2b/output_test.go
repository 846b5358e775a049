package e2b

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

// chattyEnvd streams chunks×chunk bytes of stdout (chunk i filled with the
// letter 'a'+i%26) and one short stderr line, then exits 0.
func chattyEnvd(chunks, chunk int, release <-chan struct{}) *fakeEnvd {
	return &fakeEnvd{start: func(ctx context.Context, _ *connect.Request[process.StartRequest], s *connect.ServerStream[process.StartResponse]) error {
		_ = s.Send(startEvent(7))
		for i := range chunks {
			if err := s.Send(dataEvent(strings.Repeat(string(rune('a'+i%26)), chunk), "")); err != nil {
				return err
			}
		}
		_ = s.Send(dataEvent("", "warning\n"))
		if release != nil {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return s.Send(endEvent(0, ""))
	}}
}

func chattyOutput(chunks, chunk int) string {
	var b strings.Builder
	for i := range chunks {
		b.WriteString(strings.Repeat(string(rune('a'+i%26)), chunk))
	}
	return b.String()
}

func TestCommandOutputIsBounded(t *testing.T) {
	const chunks, chunk = 64, 32 << 10 // 2 MiB of stdout
	total := chunks * chunk
	tests := []struct {
		name          string
		config, call  int
		kept          int
		truncated     bool
		stderrDropped bool
	}{
		{"client limit", 100 << 10, 0, 100 << 10, true, false},
		{"per-call limit wins", 100 << 10, 1000, 1000, true, false},
		{"limit below stderr", 0, 4, 4, true, true},
		{"exact fit", 0, total, total, false, false},
		{"unlimited", -1, 0, total, false, false},
		{"default limit above output", 0, 0, total, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLeaks(t)
			sb := envdSandbox(t, chattyEnvd(chunks, chunk, nil), func(c *Config) { c.MaxOutputBytes = tt.config })
			seen := 0
			res, err := sb.Commands().Run(context.Background(), "yes", CommandOptions{MaxOutputBytes: tt.call,
				OnStdout: func(b []byte) { seen += len(b) }})
			if err != nil {
				t.Fatal(err)
			}
			if seen != total {
				t.Errorf("callback saw %d bytes, want all %d", seen, total)
			}
			if len(res.Stdout) != tt.kept || res.Stdout != chattyOutput(chunks, chunk)[:tt.kept] {
				t.Errorf("kept %d bytes of stdout, want the first %d", len(res.Stdout), tt.kept)
			}
			if res.Truncated != tt.truncated {
				t.Errorf("Truncated = %v, want %v", res.Truncated, tt.truncated)
			}
			if wantErr := "warning\n"; tt.stderrDropped {
				if res.Stderr != wantErr[:tt.kept] {
					t.Errorf("stderr = %q, want its first %d bytes", res.Stderr, tt.kept)
				}
			} else if res.Stderr != wantErr {
				t.Errorf("stderr = %q", res.Stderr)
			}
		})
	}
}

// TestBackgroundHandleOutputIsBounded checks a handle of a process that
// keeps running holds no more than its limit while output flows.
func TestBackgroundHandleOutputIsBounded(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	const limit = 50 << 10
	sb := envdSandbox(t, chattyEnvd(100, 16<<10, release), nil)
	stderrSeen := make(chan struct{})
	h, err := sb.Commands().Start(context.Background(), "yes", CommandOptions{MaxOutputBytes: limit,
		OnStderr: func([]byte) { close(stderrSeen) }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Disconnect()
	<-stderrSeen // every stdout chunk has been consumed by now
	if n := len(h.Stdout()); n != limit || !h.Truncated() {
		t.Errorf("while running: kept %d bytes, truncated %v; want %d, true", n, h.Truncated(), limit)
	}
	close(release)
	res, err := h.Wait(context.Background())
	if err != nil || len(res.Stdout) != limit || !res.Truncated || res.Stderr != "warning\n" {
		t.Fatalf("result: %d bytes, truncated %v, stderr %q, %v", len(res.Stdout), res.Truncated, res.Stderr, err)
	}
}

// ndjsonServer streams lines, each followed by a newline and a flush, then
// end_of_execution.
func ndjsonServer(lines func(write func(string))) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		write := func(s string) { _, _ = io.WriteString(w, s+"\n"); w.(http.Flusher).Flush() }
		lines(write)
		write(`{"type":"end_of_execution"}`)
	})
}

func TestExecutionOutputIsBounded(t *testing.T) {
	const lines, size = 400, 8 << 10 // 3.2 MiB of stdout, then results
	text := strings.Repeat("y", size-1) + "\n"
	result := fmt.Sprintf(`{"type":"result","is_main_result":false,"text":"%s"}`, strings.Repeat("r", 1000))
	h := ndjsonServer(func(write func(string)) {
		for range lines {
			write(`{"type":"stdout","text":"` + strings.ReplaceAll(text, "\n", `\n`) + `","timestamp":"2026-01-02T03:04:05Z"}`)
		}
		for range 10 {
			write(result)
		}
		write(`{"type":"result","is_main_result":true,"text":"42"}`)
		write(`{"type":"error","name":"E","value":"v","traceback":"t"}`)
	})
	tests := []struct {
		name      string
		limit     int
		logs      int
		results   int
		truncated bool
	}{
		{"limit inside a message", 20000, 20000, 11, true},
		// Two big results fit, the others do not; the short main result does.
		{"limit drops results too", 3000, 3000, 3, true},
		{"unlimited", -1, lines * size, 11, false},
		{"default", 0, lines * size, 11, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLeaks(t)
			sb := interpSandbox(t, h, nil)
			seen, results := 0, 0
			exec, err := sb.RunCode(context.Background(), "print('y'*8191)", RunCodeOptions{MaxOutputBytes: tt.limit,
				OnStdout: func(m OutputMessage) { seen += len(m.Text) }, OnResult: func(Result) { results++ }})
			if err != nil {
				t.Fatal(err)
			}
			if seen != lines*size || results != 11 {
				t.Errorf("callbacks saw %d bytes and %d results, want %d and 11", seen, results, lines*size)
			}
			kept := strings.Join(exec.Logs.Stdout, "")
			if len(kept) != tt.logs || kept != strings.Repeat(text, lines)[:tt.logs] {
				t.Errorf("kept %d bytes of logs, want the first %d", len(kept), tt.logs)
			}
			if len(exec.Results) != tt.results || exec.Truncated != tt.truncated {
				t.Errorf("kept %d results, truncated %v; want %d, %v", len(exec.Results), exec.Truncated, tt.results, tt.truncated)
			}
			if exec.Text() != "42" {
				t.Errorf("main result %q not kept", exec.Text())
			}
			if exec.Error == nil || exec.Error.Name != "E" {
				t.Errorf("error = %+v; an exception is always kept", exec.Error)
			}
		})
	}
}

func TestExecutionLineTooLong(t *testing.T) {
	checkLeaks(t)
	huge := strings.Repeat("z", DefaultMaxOutputBytes+1)
	h := ndjsonServer(func(write func(string)) {
		write(`{"type":"stdout","text":"before\n"}`)
		write(`{"type":"stdout","text":"` + huge + `"}`)
	})
	exec, err := interpSandbox(t, h, nil).RunCode(context.Background(), "1", RunCodeOptions{MaxOutputBytes: 1000})
	if !errors.Is(err, ErrOutputTooLarge) {
		t.Fatalf("err = %v, want ErrOutputTooLarge", err)
	}
	if exec == nil || len(exec.Logs.Stdout) != 1 || exec.Logs.Stdout[0] != "before\n" {
		t.Errorf("exec = %+v; the output before the long line is kept", exec)
	}
	exec, err = interpSandbox(t, h, nil).RunCode(context.Background(), "1", RunCodeOptions{MaxOutputBytes: -1})
	if err != nil || len(exec.Logs.Stdout) != 2 || len(exec.Logs.Stdout[1]) != len(huge) {
		t.Errorf("unlimited: %d messages, %v", len(exec.Logs.Stdout), err)
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // many times the bufio buffer
	tests := []struct {
		name  string
		in    string
		max   int
		lines []string
		err   error
	}{
		{"lines", "a\nbb\n\nccc\n", 3, []string{"a", "bb", "", "ccc"}, io.EOF},
		{"last line without newline", "a\nbb", 3, []string{"a", "bb"}, io.EOF},
		{"line above buffer size", long + "\nz\n", len(long), []string{long, "z"}, io.EOF},
		{"line too long", "ok\n" + long + "\nz\n", len(long) - 1, []string{"ok"}, ErrOutputTooLarge},
		{"unterminated line too long", long, 10, nil, ErrOutputTooLarge},
		{"unlimited", long + "\n", -1, []string{long}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLineReader(strings.NewReader(tt.in), tt.max)
			var got []string
			for {
				line, err := lr.next()
				if err != nil {
					if !errors.Is(err, tt.err) {
						t.Errorf("err = %v, want %v", err, tt.err)
					}
					break
				}
				got = append(got, string(line))
			}
			if len(got) != len(tt.lines) {
				t.Fatalf("got %d lines, want %d", len(got), len(tt.lines))
			}
			for i := range got {
				if got[i] != tt.lines[i] {
					t.Errorf("line %d = %.20q (%d bytes), want %.20q", i, got[i], len(got[i]), tt.lines[i])
				}
			}
		})
	}
}

func TestBudgetFitKeepsRunesWhole(t *testing.T) {
	tests := []struct {
		max  int
		in   string
		want string
	}{
		{3, "héllo", "hé"},
		{2, "héllo", "h"},
		{4, "日本", "日"},
		{5, "日本", "日"},
		{6, "日本", "日本"},
		{2, "\xff\xff\xff\xff", "\xff\xff"},
	}
	for _, tt := range tests {
		b := budget{max: tt.max}
		if got := b.fit(tt.in); got != tt.want || b.used != len(got) {
			t.Errorf("fit(%q) within %d = %q (used %d), want %q", tt.in, tt.max, got, b.used, tt.want)
		}
	}
	b := budget{max: 5}
	if b.fit("abc") != "abc" || b.fit("def") != "de" || b.fit("g") != "" || !bytes.Equal([]byte(b.fit("")), nil) {
		t.Error("successive fits do not share the budget")
	}
}
