//go:build linux

package e2blocal

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
)

func TestMain(m *testing.M) {
	// TestAgentHookRequired runs this binary again as a main that forgot
	// the hook.
	if os.Getenv(noHookEnv) == "" {
		RunAgentIfRequested()
	}
	if dir := os.Getenv(childRuntimeEnv); dir != "" {
		os.Exit(runChildRuntime(dir))
	}
	os.Exit(m.Run())
}

const testKey = "e2b_0123456789abcdef"

// startRuntime starts a runtime on loopback ports with cfg's overrides.
func startRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	e2btest.NeedsSandboxes(t)
	if cfg.Agent == "" {
		cfg.Agent = e2btest.Agent()
	}
	cfg.APIAddr = "127.0.0.1:0"
	cfg.SandboxAddr = "127.0.0.1:0"
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// do sends one raw HTTP request; body may be nil, a string or a value to
// encode as JSON.
func do(t testing.TB, method, url string, body any, hdr map[string]string) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s %s: %v", method, url, err)
	}
	return reply{resp.StatusCode, resp.Header, data}
}

func api(t testing.TB, rt *Runtime, method, path string, body any) reply {
	t.Helper()
	return do(t, method, rt.APIURL()+path, body, map[string]string{"X-API-Key": testKey})
}

// createSandbox creates one sandbox through v2 and returns its response.
func createSandbox(t testing.TB, rt *Runtime, body map[string]any) sandboxBody {
	t.Helper()
	if body == nil {
		body = map[string]any{"templateID": "base"}
	}
	r := api(t, rt, "POST", "/v2/sandboxes", body)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var sb sandboxBody
	r.decode(t, &sb)
	return sb
}

// sbx sends a request to a sandbox's envd (or another port) via the routing address.
func sbx(t testing.TB, rt *Runtime, id, port, method, path string, body any) reply {
	t.Helper()
	return do(t, method, rt.SandboxURL()+path, body, map[string]string{hdrSandboxID: id, hdrSandboxPort: port})
}

func readDir(dir string) ([]os.DirEntry, error) { return os.ReadDir(dir) }
