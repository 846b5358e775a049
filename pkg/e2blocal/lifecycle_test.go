//go:build linux

package e2blocal

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// waitState polls GET /sandboxes/{id} until its status/state match.
func waitState(t testing.TB, rt *Runtime, id string, wantStatus int, wantState string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := api(t, rt, "GET", "/sandboxes/"+id, nil)
		var d detailBody
		if r.status == http.StatusOK {
			r.decode(t, &d)
		}
		if r.status == wantStatus && (wantState == "" || d.State == wantState) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s: status %d state %q, want %d %q", id, r.status, d.State, wantStatus, wantState)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sleepPast waits until half a second after a sandbox's first deadline, so
// a timer that was not re-armed would have fired by then.
func sleepPast(endAt time.Time) {
	time.Sleep(time.Until(endAt) + 500*time.Millisecond)
}

func assert502(t testing.TB, rt *Runtime, id string) {
	t.Helper()
	r := sbx(t, rt, id, "49983", "GET", "/health", nil)
	var body struct {
		SandboxID string `json:"sandboxId"`
		Message   string `json:"message"`
		Code      int    `json:"code"`
	}
	r.decode(t, &body)
	if r.status != http.StatusBadGateway || body.Code != 502 || body.SandboxID != id || body.Message != "The sandbox was not found" {
		t.Fatalf("want E2B 502 for %s, got %d %s", id, r.status, r.body)
	}
}

func TestTimeoutExpiry(t *testing.T) {
	rt := startRuntime(t, Config{})
	t.Run("kill", func(t *testing.T) {
		// Long enough to look the sandbox up on a loaded machine before it expires.
		sb := createSandbox(t, rt, map[string]any{"templateID": "base", "timeout": 3})
		s := rt.lookup(sb.SandboxID)
		pids, dir := jail.ProcessTree(s.proc.Cmd.Process.Pid), rt.fs.SandboxDir(s.hostKey)
		waitState(t, rt, sb.SandboxID, http.StatusNotFound, "")
		assert502(t, rt, sb.SandboxID)
		// The expiry tears down in the background after forgetting the id.
		assertGone(t, pids)
		deadline := time.Now().Add(10 * time.Second)
		for _, err := readDir(dir); err == nil; _, err = readDir(dir) {
			if time.Now().After(deadline) {
				t.Fatal("sandbox data survived the kill")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("autoPause", func(t *testing.T) {
		sb := createSandbox(t, rt, map[string]any{"templateID": "base", "timeout": 1, "autoPause": true})
		waitState(t, rt, sb.SandboxID, http.StatusOK, "paused")
		assert502(t, rt, sb.SandboxID)
		r := api(t, rt, "POST", "/v2/sandboxes/"+sb.SandboxID+"/connect", map[string]any{"timeout": 60})
		if r.status != http.StatusCreated {
			t.Fatalf("connect paused: %d %s", r.status, r.body)
		}
		if h := sbx(t, rt, sb.SandboxID, "49983", "GET", "/health", nil); h.status != http.StatusNoContent {
			t.Fatalf("health after resume: %d", h.status)
		}
	})
	// The two below wait past the sandbox's first deadline; they run side by
	// side. 10 s leaves a loaded machine ample time to send the next call.
	t.Run("setTimeout re-arms", func(t *testing.T) {
		t.Parallel()
		sb := createSandbox(t, rt, map[string]any{"templateID": "base", "timeout": 10})
		firstEnd := time.Now().Add(10 * time.Second) // no earlier than the real one
		if r := api(t, rt, "POST", "/sandboxes/"+sb.SandboxID+"/timeout", map[string]any{"timeout": 60}); r.status != http.StatusNoContent {
			t.Fatalf("set timeout: %d %s", r.status, r.body)
		}
		sleepPast(firstEnd)
		waitState(t, rt, sb.SandboxID, http.StatusOK, "running")
		if r := api(t, rt, "POST", "/sandboxes/"+sb.SandboxID+"/timeout", map[string]any{"timeout": 1}); r.status != http.StatusNoContent {
			t.Fatalf("set timeout: %d %s", r.status, r.body)
		}
		waitState(t, rt, sb.SandboxID, http.StatusNotFound, "")
	})
	t.Run("refresh extends", func(t *testing.T) {
		t.Parallel()
		sb := createSandbox(t, rt, map[string]any{"templateID": "base", "timeout": 10})
		firstEnd := time.Now().Add(10 * time.Second) // no earlier than the real one
		if r := api(t, rt, "POST", "/sandboxes/"+sb.SandboxID+"/refreshes", map[string]any{"duration": 60}); r.status != http.StatusNoContent {
			t.Fatalf("refresh: %d %s", r.status, r.body)
		}
		sleepPast(firstEnd)
		waitState(t, rt, sb.SandboxID, http.StatusOK, "running")
	})
}

func TestPauseResumeKeepsMemory(t *testing.T) {
	pauseResumeKeepsMemory(t, startRuntime(t, Config{}))
}

// pauseResumeKeepsMemory pauses and resumes a sandbox of rt, whichever
// way rt pauses (cgroup v1 or v2 freezer, SIGSTOP).
func pauseResumeKeepsMemory(t *testing.T, rt *Runtime) {
	sb := createSandbox(t, rt, nil)
	id := sb.SandboxID
	// A background process holds state only in memory: a counter it bumps
	// and writes out on every SIGUSR1.
	mustRun(t, rt, sb, `nohup python3 -c '
import signal, time
n = [41]
def bump(*_):
    n[0] += 1
    open("/home/user/count", "w").write(str(n[0]))
signal.signal(signal.SIGUSR1, bump)
open("/home/user/pid", "w").write(str(__import__("os").getpid()))
while True: time.sleep(1)
' >/dev/null 2>&1 &
for i in $(seq 100); do [ -s /home/user/pid ] && break; sleep 0.05; done`)
	mustRun(t, rt, sb, `kill -USR1 $(cat /home/user/pid)
for i in $(seq 100); do [ -s /home/user/count ] && break; sleep 0.05; done`)

	if r := api(t, rt, "POST", "/sandboxes/"+id+"/pause", map[string]any{}); r.status != http.StatusNoContent {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	r := api(t, rt, "POST", "/sandboxes/"+id+"/pause", nil)
	if r.status != http.StatusConflict {
		t.Fatalf("second pause: %d %s", r.status, r.body)
	}
	assertErrorBody(t, r, http.StatusConflict)
	waitState(t, rt, id, http.StatusOK, "paused")
	assert502(t, rt, id)
	assertFrozen(t, rt.lookup(id))
	if r := api(t, rt, "POST", "/sandboxes/"+id+"/resume", map[string]any{"timeout": 60}); r.status != http.StatusCreated {
		t.Fatalf("deprecated resume: %d %s", r.status, r.body)
	}
	if r := api(t, rt, "POST", "/sandboxes/"+id+"/pause", nil); r.status != http.StatusNoContent {
		t.Fatalf("pause again: %d %s", r.status, r.body)
	}
	for _, step := range []struct {
		path string
		body any
		want int
	}{
		{"/sandboxes/" + id + "/connect", map[string]any{"timeout": 60}, http.StatusCreated},
		{"/sandboxes/" + id + "/connect", map[string]any{"timeout": 60}, http.StatusOK},
		{"/v2/sandboxes/" + id + "/connect", nil, http.StatusOK},
	} {
		r := api(t, rt, "POST", step.path, step.body)
		if r.status != step.want {
			t.Fatalf("POST %s: %d, want %d: %s", step.path, r.status, step.want, r.body)
		}
		var got sandboxBody
		r.decode(t, &got)
		if got.SandboxID != id || got.EnvdAccessToken != sb.EnvdAccessToken {
			t.Fatalf("connect body %s", r.body)
		}
	}
	out := mustRun(t, rt, sb, `kill -USR1 $(cat /home/user/pid)
for i in $(seq 100); do [ "$(cat /home/user/count)" != 42 ] && break; sleep 0.05; done; cat /home/user/count`)
	if strings.TrimSpace(out) != "43" {
		t.Fatalf("counter after resume = %q, want 43 (state lost across pause)", out)
	}
}

func TestAutoResume(t *testing.T) {
	rt := startRuntime(t, Config{})
	sb := createSandbox(t, rt, map[string]any{"templateID": "base", "timeout": 600, "autoPause": true, "autoResume": map[string]bool{"enabled": true}})
	if r := api(t, rt, "POST", "/sandboxes/"+sb.SandboxID+"/pause", nil); r.status != http.StatusNoContent {
		t.Fatalf("pause: %d", r.status)
	}
	if got := strings.TrimSpace(mustRun(t, rt, sb, "echo resumed")); got != "resumed" {
		t.Fatalf("got %q", got)
	}
	waitState(t, rt, sb.SandboxID, http.StatusOK, "running")
	var d detailBody
	api(t, rt, "GET", "/sandboxes/"+sb.SandboxID, nil).decode(t, &d)
	if !d.Lifecycle.AutoResume || d.Lifecycle.OnTimeout != "pause" {
		t.Fatalf("lifecycle %+v", d.Lifecycle)
	}
	// Resumed with its creation timeout, not a default.
	if left := time.Until(d.EndAt); left < 500*time.Second {
		t.Fatalf("auto-resumed sandbox ends in %v, want about 600s", left)
	}
}

func TestMetrics(t *testing.T) {
	rt := startRuntime(t, Config{MemoryBytes: 256 << 20})
	sb := createSandbox(t, rt, nil)
	mustRun(t, rt, sb, "head -c 100000 /dev/urandom > /home/user/blob")
	r := api(t, rt, "GET", "/sandboxes/"+sb.SandboxID+"/metrics", nil)
	var ms []metricBody
	r.decode(t, &ms)
	if r.status != http.StatusOK || len(ms) == 0 {
		t.Fatalf("metrics: %d %s", r.status, r.body)
	}
	m := ms[len(ms)-1]
	if m.MemUsed <= 0 || m.MemTotal != 256<<20 || m.DiskUsed < 100000 || m.DiskTotal <= 0 || m.CPUCount < 1 || m.TimestampUnix == 0 {
		t.Fatalf("metric %+v", m)
	}
	r = api(t, rt, "GET", "/sandboxes/metrics?sandbox_ids="+sb.SandboxID+",aaaaaaaaaaaaaaaaaaaa", nil)
	var many struct {
		Sandboxes map[string]metricBody `json:"sandboxes"`
	}
	r.decode(t, &many)
	if r.status != http.StatusOK || len(many.Sandboxes) != 1 || many.Sandboxes[sb.SandboxID].MemUsed <= 0 {
		t.Fatalf("metrics many: %d %s", r.status, r.body)
	}
}

func TestRouting(t *testing.T) {
	rt := startRuntime(t, Config{})
	sb := createSandbox(t, rt, nil)
	t.Run("host form", func(t *testing.T) {
		for _, host := range []string{"49983-" + sb.SandboxID + ".e2b.local", "49983-" + sb.SandboxID + "-6532622b.e2b.local"} {
			req, _ := http.NewRequest("GET", rt.SandboxURL()+"/health", nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("host %s: %d", host, resp.StatusCode)
			}
		}
	})
	t.Run("sandbox's own ports", func(t *testing.T) {
		mustRun(t, rt, sb, `mkdir -p ~/site && echo hello-from-inside > ~/site/index.html
cd ~/site && nohup python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &
for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null && break; sleep 0.05; done`)
		req, _ := http.NewRequest("GET", rt.SandboxURL()+"/index.html", nil)
		req.Host = "8000-" + sb.SandboxID + ".e2b.local"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "hello-from-inside" {
			t.Fatalf("user port via host: %d %s", resp.StatusCode, body)
		}
		if r := sbx(t, rt, sb.SandboxID, "8001", "GET", "/", nil); r.status != http.StatusBadGateway {
			t.Fatalf("closed user port: %d %s", r.status, r.body)
		}
	})
	t.Run("unknown and missing", func(t *testing.T) {
		assert502(t, rt, "aaaaaaaaaaaaaaaaaaaa")
		r := do(t, "GET", rt.SandboxURL()+"/health", nil, nil)
		if r.status != http.StatusBadGateway {
			t.Fatalf("no routing info: %d", r.status)
		}
	})
	t.Run("streaming is flushed", func(t *testing.T) {
		// Interpreter lines must arrive while the cell still runs.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		body := `{"code":"import time\nprint('first', flush=True)\ntime.sleep(30)"}`
		req, _ := http.NewRequestWithContext(ctx, "POST", rt.SandboxURL()+"/execute", strings.NewReader(body))
		req.Header.Set(hdrSandboxID, sb.SandboxID)
		req.Header.Set(hdrSandboxPort, "49999")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		start := time.Now()
		for sc.Scan() {
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("bad NDJSON line %q", sc.Text())
			}
			if line["type"] == "stdout" {
				break
			}
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("stdout arrived only after %v", time.Since(start))
		}
		// Dropping the stream interrupts the cell (client disconnects
		// propagate through the proxy), so the next one runs at once.
		resp.Body.Close()
		cancel()
		ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel2()
		req2, _ := http.NewRequestWithContext(ctx2, "POST", rt.SandboxURL()+"/execute", strings.NewReader(`{"code":"6*7"}`))
		req2.Header = req.Header.Clone()
		resp2, err := http.DefaultClient.Do(req2)
		if err != nil {
			t.Fatalf("execution after disconnect: %v", err)
		}
		defer resp2.Body.Close()
		var all strings.Builder
		sc = bufio.NewScanner(resp2.Body)
		for sc.Scan() {
			all.WriteString(sc.Text())
		}
		if !strings.Contains(all.String(), `"42"`) {
			t.Fatalf("second execution: %s", all.String())
		}
	})
}

// TestProxyFastStreams guards the proxy against dropping streams whose
// response starts before the request body has been fully forwarded.
func TestProxyFastStreams(t *testing.T) {
	rt := startRuntime(t, Config{})
	sb := createSandbox(t, rt, nil)
	for range 150 {
		mustRun(t, rt, sb, `echo hi > ~/f && [ "$(cat ~/f)" = hi ]`)
	}
}

func TestKillPausedAndConnectRearms(t *testing.T) {
	rt := startRuntime(t, Config{})
	paused := createSandbox(t, rt, nil)
	pids := jail.ProcessTree(rt.lookup(paused.SandboxID).proc.Cmd.Process.Pid)
	if r := api(t, rt, "POST", "/sandboxes/"+paused.SandboxID+"/pause", nil); r.status != http.StatusNoContent {
		t.Fatalf("pause: %d", r.status)
	}
	if r := api(t, rt, "GET", "/sandboxes/"+paused.SandboxID+"/metrics", nil); r.status != http.StatusOK {
		t.Fatalf("metrics of a paused sandbox: %d %s", r.status, r.body)
	}
	if r := api(t, rt, "DELETE", "/sandboxes/"+paused.SandboxID, nil); r.status != http.StatusNoContent {
		t.Fatalf("kill paused: %d %s", r.status, r.body)
	}
	assertGone(t, pids)

	sb := createSandbox(t, rt, map[string]any{"templateID": "base", "timeout": 10})
	firstEnd := time.Now().Add(10 * time.Second)
	if r := api(t, rt, "POST", "/sandboxes/"+sb.SandboxID+"/connect", map[string]any{"timeout": 60}); r.status != http.StatusOK {
		t.Fatalf("connect running: %d %s", r.status, r.body)
	}
	sleepPast(firstEnd)
	waitState(t, rt, sb.SandboxID, http.StatusOK, "running")

	// A shorter timeout on connect leaves the later end in place (E2B only
	// extends on connect); a longer one extends it.
	endAt := func() time.Time {
		var d detailBody
		api(t, rt, "GET", "/sandboxes/"+sb.SandboxID, nil).decode(t, &d)
		return d.EndAt
	}
	before := endAt()
	for _, path := range []string{"/sandboxes/", "/v2/sandboxes/"} {
		if r := api(t, rt, "POST", path+sb.SandboxID+"/connect", map[string]any{"timeout": 5}); r.status != http.StatusOK {
			t.Fatalf("connect %s with a shorter timeout: %d %s", path, r.status, r.body)
		}
		if got := endAt(); !got.Equal(before) {
			t.Fatalf("connect %s with a shorter timeout moved endAt from %v to %v", path, before, got)
		}
	}
	if r := api(t, rt, "POST", "/sandboxes/"+sb.SandboxID+"/connect", map[string]any{"timeout": 300}); r.status != http.StatusOK {
		t.Fatalf("connect with a longer timeout: %d %s", r.status, r.body)
	}
	if left := time.Until(endAt()); left < 250*time.Second {
		t.Fatalf("connect with a longer timeout left %v, want about 300s", left)
	}
}

// assertFrozen checks that no task of a paused sandbox can run.
func assertFrozen(t testing.TB, s *sandbox) {
	t.Helper()
	switch g := s.cg.(type) {
	case *jail.V1Group:
		if st := g.FreezerState(); st != "FROZEN" {
			t.Fatalf("freezer state %q", st)
		}
	case *jail.V2Group:
		if jail.ReadStatField(g.Dir+"/cgroup.events", "frozen") != 1 {
			t.Fatal("cgroup not frozen")
		}
	default:
		for _, pid := range jail.ProcessTree(s.proc.Cmd.Process.Pid) {
			data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if i := strings.LastIndexByte(string(data), ')'); i < 0 || data[i+2] != 'T' {
				t.Fatalf("pid %d not stopped: %s", pid, data)
			}
		}
	}
}
