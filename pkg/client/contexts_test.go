package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
)

// TestContextCalls checks each context method's request (method, path,
// body) and how it reads the answer, a 410 problem included.
func TestContextCalls(t *testing.T) {
	t.Parallel()
	type seen struct{ method, path, body string }
	got := make(chan seen, 1)
	answers := map[string]struct {
		status int
		body   string
	}{
		"POST /v1/sessions/s%2F1/contexts":          {201, `{"contextId":"c1","language":"bash","cwd":"/tmp","createdAt":"2026-01-02T03:04:05Z"}`},
		"GET /v1/sessions/s%2F1/contexts":           {200, `{"contexts":[{"contextId":"c1","language":"bash","cwd":"/tmp","createdAt":"2026-01-02T03:04:05Z"}]}`},
		"DELETE /v1/sessions/s%2F1/contexts/c1":     {204, ``},
		"POST /v1/sessions/s%2F1/contexts/c1/reset": {410, `{"type":"https://sessionbox.dev/problems/gone","title":"Gone","status":410,"detail":"context \"c1\" of session \"s/1\" is gone"}`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.EscapedPath(), string(b)}
		a, ok := answers[r.Method+" "+r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		ct := "application/json"
		if a.status >= 400 {
			ct = "application/problem+json"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "sbx_test_0123456789", nil)
	ctx := context.Background()
	want := client.CodeContext{ContextID: "c1", Language: "bash", Cwd: "/tmp", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

	cc, err := c.CreateContext(ctx, "s/1", "bash", "/tmp")
	if err != nil || *cc != want {
		t.Fatalf("create = %+v, %v", cc, err)
	}
	var body map[string]string
	if s := <-got; json.Unmarshal([]byte(s.body), &body) != nil || body["language"] != "bash" || body["cwd"] != "/tmp" {
		t.Fatalf("create sent %+v", s)
	}
	list, err := c.Contexts(ctx, "s/1")
	if err != nil || len(list) != 1 || list[0] != want {
		t.Fatalf("list = %+v, %v", list, err)
	}
	<-got
	if err := c.DeleteContext(ctx, "s/1", "c1"); err != nil {
		t.Fatal(err)
	}
	<-got
	err = c.ResetContext(ctx, "s/1", "c1")
	var p *client.Problem
	if !errors.As(err, &p) || p.Status != 410 || p.Detail == "" {
		t.Fatalf("reset of a gone context: %v", err)
	}
	<-got
}
