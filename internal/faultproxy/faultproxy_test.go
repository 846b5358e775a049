package faultproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func get(t *testing.T, ctx context.Context, url, target string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", target)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestProxy(t *testing.T) {
	t.Parallel()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "real") }))
	t.Cleanup(backend.Close)
	p := New(t, backend.URL)
	ctx := t.Context()
	steps := []struct {
		name   string
		fault  *Fault
		target string
		status int
		body   string
	}{
		{"no fault forwards", nil, "", 200, "real"},
		{"a status answers", &Fault{Status: 503}, "", 503, `{"code":503,"message":"injected"}`},
		{"a DynamoDB error", &Fault{Status: 400, Body: "x", Match: DynamoDBOp("PutItem")}, "DynamoDB_20120810.PutItem", 400, "x"},
		{"other operations pass", nil, "DynamoDB_20120810.GetItem", 200, "real"},
	}
	for _, s := range steps {
		if s.fault != nil {
			p.Set(*s.fault)
		}
		status, body, err := get(t, ctx, p.URL, s.target)
		if err != nil || status != s.status || body != s.body {
			t.Fatalf("%s: %d %q %v, want %d %q", s.name, status, body, err, s.status, s.body)
		}
	}
	p.Heal()
	if status, body, _ := get(t, ctx, p.URL, ""); status != 200 || body != "real" {
		t.Fatalf("after Heal: %d %q", status, body)
	}
}

func TestProxyPass(t *testing.T) {
	t.Parallel()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(backend.Close)
	p := New(t, backend.URL)
	p.Set(Fault{Status: 500, Pass: 2})
	var got []int
	for range 4 {
		status, _, err := get(t, t.Context(), p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, status)
	}
	if got[0] != 200 || got[1] != 200 || got[2] != 500 || got[3] != 500 {
		t.Fatalf("statuses %v, want two passed, then the fault", got)
	}
}

// TestProxyHang: a hung request is answered by nothing; its client gives
// up at its own deadline, as on a stalled service.
func TestProxyHang(t *testing.T) {
	t.Parallel()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(backend.Close)
	p := New(t, backend.URL)
	p.Set(Fault{Hang: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := get(t, ctx, p.URL, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung request: %v, want the client's deadline", err)
	}
	p.Set(Fault{Hang: time.Millisecond, Status: 504})
	if status, _, err := get(t, t.Context(), p.URL, ""); err != nil || status != 504 {
		t.Fatalf("after a short hang: %d, %v; want 504", status, err)
	}
}
