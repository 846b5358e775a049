package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/httplimits"
	"github.com/sessionbox/sessionbox/pkg/local"
)

// TestStalledClients: hundreds of clients that send headers announcing a
// body and never send it (with a key, and without), or never finish their
// headers, do not take the API down: /healthz answers within a second and
// a real execute works meanwhile, and the server drops every stalled
// connection once its read deadline passes.
func TestStalledClients(t *testing.T) {
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	const idle = 2 * time.Second
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice},
		HTTPLimits: httplimits.Limits{ReadHeaderTimeout: idle, BodyIdleTimeout: idle}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	addr := strings.TrimPrefix(svc.URL, "http://")
	stalls := []struct {
		name string
		head string
	}{
		{"body with key", "POST /v1/sessions/s1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + alice.Secret + "\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n"},
		{"body without key", "POST /v1/sessions/s1/execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n"},
		{"unfinished headers", "POST /v1/sessions/s1/execute HTTP/1.1\r\nHost: x\r\n"},
	}
	const perKind = 100
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, s := range stalls {
		for range perKind {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			conns = append(conns, c)
			if _, err := io.WriteString(c, s.head); err != nil {
				t.Fatalf("%s: write: %v", s.name, err)
			}
		}
	}
	// Meanwhile the service answers.
	fast := &http.Client{Timeout: time.Second}
	for i := range 5 {
		resp, err := fast.Get(svc.URL + "/healthz")
		if err != nil {
			t.Fatalf("healthz %d with %d stalled clients: %v", i, len(conns), err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz = %d", resp.StatusCode)
		}
	}
	if code, res := call(t, "POST", svc.URL+"/v1/sessions/s2/execute", alice.Secret, `{"code":"6 * 7"}`); code != http.StatusOK {
		t.Fatalf("execute with stalled clients = %d %v", code, res)
	}
	// Every stalled connection is closed by the server, well within our
	// own bound.
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for i, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(3*idle + 10*time.Second))
			_, err := io.Copy(io.Discard, c)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				errs <- fmt.Errorf("%s connection %d still open", stalls[i/perKind].name, i%perKind)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
