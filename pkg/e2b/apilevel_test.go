package e2b

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// oldServer serves E2B's API as an older deployment does: routes it lacks
// answer 404 (or 405 where another method has the path, as Go's mux and
// E2B's router do), and it records what it was asked.
type oldServer struct {
	mu   sync.Mutex
	seen []string
}

func (o *oldServer) record(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, r.Method+" "+r.URL.Path+" "+strings.TrimSpace(string(b)))
}

func (o *oldServer) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen...)
}

// newOldServer serves create on v1 and connect as the given generation:
// "v1" (POST /sandboxes/{id}/connect) or "resume" (only the deprecated
// resume, 409 for a running sandbox).
func newOldServer(t *testing.T, connect string, running bool) (*oldServer, string) {
	o := &oldServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/sandboxes", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "[]") })
	mux.HandleFunc("POST /sandboxes", func(w http.ResponseWriter, r *http.Request) {
		o.record(r)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, sandboxJSON)
	})
	if connect == "v1" {
		mux.HandleFunc("POST /sandboxes/{id}/connect", func(w http.ResponseWriter, r *http.Request) {
			o.record(r)
			if r.PathValue("id") != "abc123" {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"code":404,"message":"sandbox not found"}`)
				return
			}
			_, _ = io.WriteString(w, sandboxJSON)
		})
	}
	mux.HandleFunc("POST /sandboxes/{id}/resume", func(w http.ResponseWriter, r *http.Request) {
		o.record(r)
		switch {
		case r.PathValue("id") != "abc123":
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"code":404,"message":"paused sandbox not found"}`)
		case running:
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"code":409,"message":"sandbox is already running"}`)
		default:
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, sandboxJSON)
		}
	})
	mux.HandleFunc("POST /sandboxes/{id}/timeout", func(w http.ResponseWriter, r *http.Request) {
		o.record(r)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		o.record(r)
		_, _ = io.WriteString(w, sandboxJSON)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		o.record(r)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "404 page not found")
	})
	return o, fakeServer(t, mux).URL
}

func TestOlderAPIFallback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		connect     string
		running     bool
		wantResumed bool
		want        []string // requests of create, connect, create, connect
		wantLevels  [2]string
	}{
		{"v1 connect", "v1", true, false, []string{
			`POST /v2/sandboxes {"templateID":"base","timeout":60}`,
			`POST /sandboxes {"templateID":"base","timeout":60,"secure":true}`,
			`POST /v2/sandboxes/abc123/connect {"timeout":60}`,
			`POST /sandboxes/abc123/connect {"timeout":60}`,
			`POST /sandboxes {"templateID":"base","timeout":60,"secure":true}`,
			`POST /sandboxes/abc123/connect {"timeout":60}`,
		}, [2]string{"v1", "v1"}},
		{"resume of a paused sandbox", "resume", false, true, []string{
			`POST /v2/sandboxes {"templateID":"base","timeout":60}`,
			`POST /sandboxes {"templateID":"base","timeout":60,"secure":true}`,
			`POST /v2/sandboxes/abc123/connect {"timeout":60}`,
			`POST /sandboxes/abc123/connect {"timeout":60}`,
			`POST /sandboxes/abc123/resume {"timeout":60}`,
			`POST /sandboxes {"templateID":"base","timeout":60,"secure":true}`,
			`POST /sandboxes/abc123/resume {"timeout":60}`,
		}, [2]string{"v1", "resume"}},
		{"resume of a running sandbox", "resume", true, false, []string{
			`POST /v2/sandboxes {"templateID":"base","timeout":60}`,
			`POST /sandboxes {"templateID":"base","timeout":60,"secure":true}`,
			`POST /v2/sandboxes/abc123/connect {"timeout":60}`,
			`POST /sandboxes/abc123/connect {"timeout":60}`,
			`POST /sandboxes/abc123/resume {"timeout":60}`,
			`POST /sandboxes/abc123/timeout {"timeout":60}`,
			`GET /sandboxes/abc123 `,
			`POST /sandboxes {"templateID":"base","timeout":60,"secure":true}`,
			`POST /sandboxes/abc123/resume {"timeout":60}`,
			`POST /sandboxes/abc123/timeout {"timeout":60}`,
			`GET /sandboxes/abc123 `,
		}, [2]string{"v1", "resume"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, url := newOldServer(t, tt.connect, tt.running)
			c := newTestClient(t, testConfig(url, ""))
			ctx := context.Background()
			// Twice: the second round goes straight to what the first found.
			for range 2 {
				sb, err := c.Create(ctx, CreateParams{Timeout: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if sb.ID != "abc123" || sb.AccessToken() != "tok" {
					t.Fatalf("created %+v", sb)
				}
				sb, err = c.Connect(ctx, "abc123", ConnectParams{Timeout: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if sb.Resumed != tt.wantResumed || sb.AccessToken() != "tok" || sb.EnvdVersion != "0.6.13" {
					t.Fatalf("connected %+v", sb)
				}
			}
			if got := srv.requests(); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if cr, co := c.APILevels(); [2]string{cr, co} != tt.wantLevels {
				t.Errorf("levels %s %s, want %v", cr, co, tt.wantLevels)
			}
		})
	}
}

// A missing sandbox on an old server is still ErrSandboxNotFound, and does
// not make the client forget what it learned.
func TestOlderAPIMissingSandbox(t *testing.T) {
	t.Parallel()
	_, url := newOldServer(t, "v1", true)
	c := newTestClient(t, testConfig(url, ""))
	ctx := context.Background()
	if _, err := c.Connect(ctx, "abc123", ConnectParams{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Connect(ctx, "gone1", ConnectParams{})
	if !errors.Is(err, ErrSandboxNotFound) {
		t.Fatalf("connect to a missing sandbox: %v", err)
	}
	if _, co := c.APILevels(); co != "v1" {
		t.Fatalf("connect level %q after a missing sandbox", co)
	}
}

// On a current server a 404 from v2 is the answer: once v2 worked, a
// missing sandbox costs one request.
func TestV2PinnedAfterSuccess(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/v2/sandboxes" {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, sandboxJSON)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"code":404,"message":"sandbox not found"}`)
	}))
	c := newTestClient(t, testConfig(srv.URL, ""))
	if _, err := c.Create(context.Background(), CreateParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Connect(context.Background(), "gone1", ConnectParams{}); !errors.Is(err, ErrSandboxNotFound) {
		t.Fatalf("connect: %v", err)
	}
	if strings.Join(paths, " ") != "/v2/sandboxes /v2/sandboxes/gone1/connect" {
		t.Fatalf("requests %v", paths)
	}
}

func TestCreateRetriesRateLimits(t *testing.T) {
	t.Parallel()
	const limited = `{"code":429,"message":"Rate limit exceeded"}`
	const full = `{"code":429,"message":"you have reached the maximum number of concurrent E2B sandboxes (20). If you need more, please visit 'https://e2b.dev/docs/billing'"}`
	tests := []struct {
		name      string
		replies   []reply
		maxWait   time.Duration
		wantErr   bool
		wantHits  int32
		leastWait time.Duration
	}{
		{"retry-after honoured", []reply{{429, limited, map[string]string{"Retry-After": "1"}}, {201, sandboxJSON, nil}},
			30 * time.Second, false, 2, time.Second},
		{"concurrency cap waits with backoff", []reply{{429, full, nil}, {429, full, nil}, {201, sandboxJSON, nil}},
			30 * time.Second, false, 3, 0},
		{"bounded total wait", []reply{{429, limited, map[string]string{"Retry-After": "1"}}},
			1500 * time.Millisecond, true, 2, time.Second},
		{"no retries when disabled", []reply{{429, limited, nil}}, -1, true, 1, 0},
		{"other failures are not retried", []reply{{500, `{"code":500,"message":"boom"}`, nil}, {201, sandboxJSON, nil}},
			30 * time.Second, true, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &scripted{replies: tt.replies}
			cfg := testConfig(fakeServer(t, s).URL, "")
			cfg.Retry.MaxRateLimitWait = tt.maxWait
			c := newTestClient(t, cfg)
			start := time.Now()
			_, err := c.Create(context.Background(), CreateParams{Secure: new(bool)})
			if (err != nil) != tt.wantErr || s.hits.Load() != tt.wantHits {
				t.Fatalf("err %v after %d requests", err, s.hits.Load())
			}
			if tt.wantErr && tt.replies[0].status == 429 && !errors.Is(err, ErrRateLimited) {
				t.Fatalf("err %v is not ErrRateLimited", err)
			}
			if took := time.Since(start); took < tt.leastWait {
				t.Fatalf("took %s, the server asked for %s", took, tt.leastWait)
			}
		})
	}
}

// The caller's deadline bounds the waiting: a Retry-After beyond it fails
// at once with the 429.
func TestCreateRateLimitWithinDeadline(t *testing.T) {
	t.Parallel()
	s := &scripted{replies: []reply{{429, `{"code":429,"message":"Rate limit exceeded"}`, map[string]string{"Retry-After": "20"}}}}
	c := newTestClient(t, testConfig(fakeServer(t, s).URL, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Create(ctx, CreateParams{})
	if !errors.Is(err, ErrRateLimited) || time.Since(start) > time.Second || s.hits.Load() != 1 {
		t.Fatalf("err %v after %s and %d requests", err, time.Since(start), s.hits.Load())
	}
}
