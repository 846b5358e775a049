package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// startLocalAlice starts local mode on a data dir of the test's with one
// key, alice's, closed when the test ends.
func startLocalAlice(t *testing.T) (*local.Service, local.Key) {
	t.Helper()
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc, alice
}

func call(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// TestServiceAndReaper starts local mode as `sessionbox serve` does, runs
// code through the API, and lets the reaper's ticker stop the idle sandbox.
func TestServiceAndReaper(t *testing.T) {
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, err := local.Start(ctx, local.Config{
		DataDir:      t.TempDir(),
		Keys:         []local.Key{alice},
		ReapInterval: 100 * time.Millisecond,
		Session: session.Config{
			IdleTimeout:           2 * time.Second,
			ActivityWriteInterval: time.Second,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()

	if code, _ := call(t, "GET", svc.URL+"/healthz", "", ""); code != http.StatusOK {
		t.Fatalf("healthz = %d", code)
	}
	if code, _ := call(t, "POST", svc.URL+"/v1/sessions/s1/execute", "sbx_wrongwrongwrongwrong", `{"code":"1"}`); code != http.StatusUnauthorized {
		t.Fatalf("bad key = %d", code)
	}
	code, res := call(t, "POST", svc.URL+"/v1/sessions/s1/execute", alice.Secret, `{"code":"6 * 7"}`)
	if code != http.StatusOK || res["success"] != true {
		t.Fatalf("execute = %d %v", code, res)
	}
	if results := res["results"].([]any); results[0].(map[string]any)["text"] != "42" {
		t.Fatalf("results = %v", results)
	}

	testwait.Until(t, 20*time.Second, func() error {
		if _, st := call(t, "GET", svc.URL+"/v1/sessions/s1/sandbox", alice.Secret, ""); st["state"] != "stopped" {
			return fmt.Errorf("the reaper did not stop the idle sandbox: %v", st)
		}
		return nil
	})

	// The next call brings the session back with a fresh sandbox.
	code, res = call(t, "POST", svc.URL+"/v1/sessions/s1/execute", alice.Secret, `{"code":"1 + 1"}`)
	if code != http.StatusOK || res["success"] != true {
		t.Fatalf("execute after reap = %d %v", code, res)
	}
}

// TestRestartKeepsSessions restarts local mode on the same data dir: the
// session record survives, its sandbox does not, and the next execute says
// it started a fresh one.
func TestRestartKeepsSessions(t *testing.T) {
	key, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func() *local.Service {
		svc, err := local.Start(ctx, local.Config{DataDir: dir, Keys: []local.Key{key}})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	svc := start()
	if code, res := call(t, "POST", svc.URL+"/v1/sessions/kept/execute", key.Secret, `{"code":"x = 1"}`); code != http.StatusOK {
		t.Fatalf("execute = %d %v", code, res)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}

	svc = start()
	defer svc.Close()
	code, st := call(t, "GET", svc.URL+"/v1/sessions/kept/sandbox", key.Secret, "")
	if code != http.StatusOK || st["sessionId"] != "kept" {
		t.Fatalf("status after restart = %d %v", code, st)
	}
	code, res := call(t, "POST", svc.URL+"/v1/sessions/kept/execute", key.Secret, `{"code":"1 + 1"}`)
	if code != http.StatusOK || res["restarted"] != true || res["success"] != true {
		t.Fatalf("execute after restart = %d %v", code, res)
	}
}

// TestKeysFollowConfiguration restarts local mode with a different key set:
// a key no longer configured stops working, and a key cannot change hands.
func TestKeysFollowConfiguration(t *testing.T) {
	old, _ := local.NewKey("alice")
	fresh, _ := local.NewKey("alice")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(keys ...local.Key) (*local.Service, error) {
		return local.Start(ctx, local.Config{DataDir: dir, Keys: keys})
	}
	svc, err := start(old)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, "GET", svc.URL+"/v1/sessions", old.Secret, ""); code != http.StatusOK {
		t.Fatalf("old key before rotation = %d", code)
	}
	_ = svc.Close()

	svc, err = start(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, "GET", svc.URL+"/v1/sessions", old.Secret, ""); code != http.StatusUnauthorized {
		t.Fatalf("removed key after restart = %d, want 401", code)
	}
	if code, _ := call(t, "GET", svc.URL+"/v1/sessions", fresh.Secret, ""); code != http.StatusOK {
		t.Fatalf("new key = %d", code)
	}
	_ = svc.Close()

	if svc, err = start(local.Key{Principal: "mallory", Secret: fresh.Secret}); err == nil {
		_ = svc.Close()
		t.Fatal("a stored key was given to another principal")
	}
}

// TestInternetAccess: local sandboxes are offline unless asked; asked, they
// get slirp's network (its DNS in resolv.conf); asked where the runtime
// cannot offer it, Start fails saying why instead of every start failing.
func TestInternetAccess(t *testing.T) {
	key, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resolver := func(t *testing.T, cfg local.Config) string {
		t.Helper()
		cfg.DataDir, cfg.Keys = t.TempDir(), []local.Key{key}
		svc, err := local.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		code, res := call(t, "POST", svc.URL+"/v1/sessions/net/execute", key.Secret, `{"code":"open('/etc/resolv.conf').read().split()[-1]"}`)
		if code != http.StatusOK || res["success"] != true {
			t.Fatalf("execute = %d %v", code, res)
		}
		return res["results"].([]any)[0].(map[string]any)["text"].(string)
	}
	if got := resolver(t, local.Config{}); got != "127.0.0.1" {
		t.Errorf("default sandbox resolves through %s, want offline 127.0.0.1", got)
	}
	online := local.Config{Session: session.Config{AllowInternetAccess: true}}
	_, err = local.Start(ctx, local.Config{DataDir: t.TempDir(), Keys: []local.Key{key}, Session: online.Session,
		Runtime: e2blocal.Config{Slirp4netns: "/nonexistent/slirp4netns"}})
	if err == nil || !strings.Contains(err.Error(), "internet access") {
		t.Fatalf("Start without slirp4netns but with internet access: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("internet access for local sandboxes needs root; the refusal above is what non-root gets")
	}
	if got := resolver(t, online); got != "10.0.2.3" {
		t.Errorf("sandbox with internet access resolves through %s, want slirp's 10.0.2.3", got)
	}
}

// TestE2BVariablesChangeNothing: E2B_* variables left in a shell (E2B_DEBUG
// above all, which skips the control plane and names every sandbox
// debug_sandbox_id) reach neither the service's E2B client nor its sandboxes:
// local mode configures its client explicitly.
func TestE2BVariablesChangeNothing(t *testing.T) {
	for k, v := range map[string]string{"E2B_DEBUG": "true", "E2B_API_KEY": "e2b_from_the_shell",
		"E2B_API_URL": "http://127.0.0.1:1", "E2B_SANDBOX_URL": "http://127.0.0.1:1", "E2B_DOMAIN": "shell.invalid"} {
		t.Setenv(k, v)
	}
	key, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, err := local.Start(ctx, local.Config{DataDir: t.TempDir(), Keys: []local.Key{key}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	code, res := call(t, "POST", svc.URL+"/v1/sessions/s1/execute", key.Secret, `{"code":"6 * 7"}`)
	if code != http.StatusOK || res["success"] != true || res["results"].([]any)[0].(map[string]any)["text"] != "42" {
		t.Fatalf("execute = %d %v", code, res)
	}
	_, st := call(t, "GET", svc.URL+"/v1/sessions/s1/sandbox", key.Secret, "")
	id, _ := st["sandboxId"].(string)
	if id == "" || id == "debug_sandbox_id" {
		t.Fatalf("sandbox id %q: the service's E2B client read E2B_DEBUG", id)
	}
}
