package e2e

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// newSessionPace is the gap between paced new sessions: a chat service
// starts sessions one at a time, and the runtime refills its warm pool in
// the gaps.
const newSessionPace = 250 * time.Millisecond

// BenchmarkNewSessionFirstExecute is what every new chat pays: the first
// execute of a session nobody has used, through the whole local stack
// (auth, the tenant cap, the session record, the sandbox create, the
// kernel, the cell). Sessions arrive one at a time; each is stopped after
// it is measured, so the tenant cap never interferes.
func BenchmarkNewSessionFirstExecute(b *testing.B) {
	s := newStack(b)
	s.exec(s.alice, "warm-up", "1")
	s.stopSession(s.alice, "warm-up")
	samples := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		b.StopTimer()
		time.Sleep(newSessionPace)
		sid := fmt.Sprintf("new-%d", i)
		i++
		b.StartTimer()
		d := s.timedExecute(b, sid, "1 + 1", `"2"`)
		samples = append(samples, d)
		b.StopTimer()
		s.stopSession(s.alice, sid)
		b.StartTimer()
	}
	b.StopTimer()
	reportLatency(b, samples)
}

// BenchmarkNewSessionBurst10 is ten new sessions asking for their first
// result at once; p50 and p99 are over every session of every burst, and
// again over the bursts after the first (warm-), which find the runtime's
// pool grown by the bursts before.
func BenchmarkNewSessionBurst10(b *testing.B) {
	const burst = 10
	s := newStack(b)
	s.exec(s.alice, "warm-up", "1")
	s.stopSession(s.alice, "warm-up")
	var mu sync.Mutex
	samples := make([]time.Duration, 0, b.N*burst)
	round := 0
	for b.Loop() {
		b.StopTimer()
		time.Sleep(2 * time.Second) // the pool refills between bursts
		ids := make([]string, burst)
		for j := range ids {
			ids[j] = fmt.Sprintf("burst-%d-%d", round, j)
		}
		round++
		b.StartTimer()
		var wg sync.WaitGroup
		for j, sid := range ids {
			key := s.alice
			if j%2 == 1 {
				key = s.bob // the principal share is half the tenant's cap
			}
			wg.Go(func() {
				d := s.timedExecuteAs(b, key, sid, "1 + 1", `"2"`)
				mu.Lock()
				samples = append(samples, d)
				mu.Unlock()
			})
		}
		wg.Wait()
		b.StopTimer()
		for j, sid := range ids {
			key := s.alice
			if j%2 == 1 {
				key = s.bob
			}
			s.stopSession(key, sid)
		}
		b.StartTimer()
	}
	b.StopTimer()
	if len(samples) > burst {
		// Bursts end in any order, but all of the first before the second.
		reportLatencyAs(b, slices.Clone(samples[burst:]), "warm-")
	}
	reportLatency(b, samples)
}

// timedExecute runs code in sid as alice and returns how long the call took;
// the answer must hold want.
func (s *stack) timedExecute(b *testing.B, sid, code, want string) time.Duration {
	return s.timedExecuteAs(b, s.alice, sid, code, want)
}

func (s *stack) timedExecuteAs(b *testing.B, key, sid, code, want string) time.Duration {
	start := time.Now()
	req, _ := http.NewRequest("POST", s.url+"/v1/sessions/"+sid+"/execute", strings.NewReader(`{"code":`+quoteJSON(code)+`}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		b.Error(err)
		return 0
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
		b.Errorf("execute %s: status %d: %s", sid, resp.StatusCode, body)
	}
	return d
}

// stopSession kills sid's sandbox, so it stops counting against the caps.
func (s *stack) stopSession(key, sid string) {
	s.t.Helper()
	resp, body := s.req(key, "POST", "/v1/sessions/"+sid+"/sandbox/stop", nil)
	if resp.StatusCode != 200 {
		s.t.Fatalf("stop %s: status %d: %s", sid, resp.StatusCode, body)
	}
}

func quoteJSON(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// BenchmarkLoad20x20 is twenty sessions running twenty executes each, all
// at once, on whatever cores the machine has. "first-wave" includes the
// twenty sandbox starts; "warm" is the next wave on the same sessions.
func BenchmarkLoad20x20(b *testing.B) {
	const sessions, executes = 20, 20
	s := newStack(b)
	wave := func(round int) []time.Duration {
		var mu sync.Mutex
		samples := make([]time.Duration, 0, sessions*executes)
		var wg sync.WaitGroup
		for i := range sessions {
			sid := fmt.Sprintf("load-%d-%d", round, i)
			wg.Go(func() {
				for range executes {
					d := s.timedExecute(b, sid, "1 + 1", `"2"`)
					mu.Lock()
					samples = append(samples, d)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return samples
	}
	var first, warm []time.Duration
	round := 0
	for b.Loop() {
		first = append(first, wave(round)...)
		warm = append(warm, wave(round)...)
		b.StopTimer()
		for i := range sessions {
			s.stopSession(s.alice, fmt.Sprintf("load-%d-%d", round, i))
		}
		round++
		time.Sleep(2 * time.Second) // the pool refills
		b.StartTimer()
	}
	b.StopTimer()
	reportLatencyAs(b, first, "first-wave-")
	reportLatencyAs(b, warm, "warm-")
}

// reportLatencyAs is reportLatency with a prefix on the metrics' names.
func reportLatencyAs(b *testing.B, samples []time.Duration, prefix string) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(q float64) float64 {
		return float64(samples[int(q*float64(len(samples)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), prefix+"p50-ms")
	b.ReportMetric(at(0.99), prefix+"p99-ms")
}
