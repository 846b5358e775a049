package e2e

import (
	"testing"
	"time"
)

// BenchmarkRunCommand puts a shell command through the API (envd starts
// bash -l -c, the service waits for its end) beside an execute of a
// trivial expression in the kernel, alternated on one warm sandbox.
func BenchmarkRunCommand(b *testing.B) {
	s := newStack(b)
	const sid = "bench-cmd"
	s.exec(s.alice, sid, "x = 1")
	var cmd, exec []time.Duration
	for b.Loop() {
		exec = append(exec, s.timedCall(b, "POST", "/v1/sessions/"+sid+"/execute", `{"code":"x + 1"}`))
		cmd = append(cmd, s.timedCall(b, "POST", "/v1/sessions/"+sid+"/commands", `{"cmd":"echo 2"}`))
	}
	b.StopTimer()
	reportPair(b, "command", cmd, exec)
}
