package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/sessionbox/sessionbox/pkg/bus"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// putEventsServer answers EventBridge's JSON protocol: no local EventBridge
// exists, so this checks the request the real SDK client sends and lets a
// test choose the answer.
type putEventsServer struct {
	mu      sync.Mutex
	entries []map[string]any
	answer  string
	status  int
}

func (s *putEventsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
		http.Error(w, "unexpected target "+r.Header.Get("X-Amz-Target"), http.StatusBadRequest)
		return
	}
	var in struct{ Entries []map[string]any }
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.entries = append(s.entries, in.Entries...)
	answer, status := s.answer, s.status
	s.mu.Unlock()
	if status == 0 {
		status = http.StatusOK
	}
	if answer == "" {
		answer = `{"FailedEntryCount":0,"Entries":[{"EventId":"e1"}]}`
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

func newEventBridge(t *testing.T, srv *putEventsServer) *bus.EventBridge {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	client := eventbridge.New(eventbridge.Options{
		Region:           "eu-west-1",
		BaseEndpoint:     aws.String(ts.URL),
		Credentials:      aws.AnonymousCredentials{},
		RetryMaxAttempts: 1,
	})
	return bus.NewEventBridge(client, "sessionbox-acme")
}

func TestEventBridgePublishesRunRequested(t *testing.T) {
	t.Parallel()
	srv := &putEventsServer{}
	b := newEventBridge(t, srv)
	req := session.RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s1", Code: "1+1", RunID: "r1", TimeoutSecs: 30}
	if err := b.PublishRunRequested(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishRunCompleted(context.Background(), session.RunCompleted{RunID: "r1", Status: session.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	if len(srv.entries) != 2 {
		t.Fatalf("entries = %v", srv.entries)
	}
	first := srv.entries[0]
	for field, want := range map[string]string{"EventBusName": "sessionbox-acme", "Source": "sessionbox", "DetailType": "Run Requested"} {
		if first[field] != want {
			t.Errorf("%s = %v, want %q", field, first[field], want)
		}
	}
	var detail session.RunRequested
	if err := json.Unmarshal([]byte(first["Detail"].(string)), &detail); err != nil || detail != req {
		t.Errorf("detail = %+v (%v), want %+v", detail, err, req)
	}
	if srv.entries[1]["DetailType"] != "Run Completed" {
		t.Errorf("second detail type = %v", srv.entries[1]["DetailType"])
	}
}

func TestEventBridgeFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer string
		status int
	}{
		{"refused entry", `{"FailedEntryCount":1,"Entries":[{"ErrorCode":"InternalFailure","ErrorMessage":"try later"}]}`, 200},
		{"service error", `{"__type":"InternalException","message":"boom"}`, 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newEventBridge(t, &putEventsServer{answer: c.answer, status: c.status})
			err := b.PublishRunRequested(context.Background(), session.RunRequested{RunID: "r"})
			if !errors.Is(err, session.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
		})
	}
}

func TestLocalRunsEveryRequestWithBoundedWorkers(t *testing.T) {
	t.Parallel()
	const workers, runs = 3, 30
	var running, peak, done atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(runs)
	b := bus.NewLocal(workers, func(ctx context.Context, e session.RunRequested) error {
		defer wg.Done()
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		running.Add(-1)
		done.Add(1)
		return nil
	}, nil)
	defer b.Close()
	for i := range runs {
		if err := b.PublishRunRequested(context.Background(), session.RunRequested{RunID: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	wg.Wait()
	if done.Load() != runs {
		t.Fatalf("done = %d", done.Load())
	}
	if peak.Load() > workers {
		t.Fatalf("peak concurrency %d > %d workers", peak.Load(), workers)
	}
}

func TestLocalHandlerErrorsDoNotStopTheWorker(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var wg sync.WaitGroup
	wg.Add(2)
	b := bus.NewLocal(1, func(ctx context.Context, e session.RunRequested) error {
		defer wg.Done()
		calls.Add(1)
		return errors.New("failed run")
	}, nil)
	defer b.Close()
	_ = b.PublishRunRequested(context.Background(), session.RunRequested{RunID: "1"})
	_ = b.PublishRunRequested(context.Background(), session.RunRequested{RunID: "2"})
	wg.Wait()
	if calls.Load() != 2 {
		t.Fatalf("calls = %d", calls.Load())
	}
}

func TestLocalQueueFullAndClosed(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	b := bus.NewLocal(1, func(ctx context.Context, e session.RunRequested) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	}, nil)
	var err error
	for i := 0; i < 5000 && err == nil; i++ {
		err = b.PublishRunRequested(context.Background(), session.RunRequested{RunID: "x"})
	}
	if !errors.Is(err, session.ErrLimit) {
		t.Fatalf("err = %v, want ErrLimit once the queue is full", err)
	}
	close(block)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishRunRequested(context.Background(), session.RunRequested{}); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("after close err = %v", err)
	}
}

func TestLocalRunCompletedSubscribers(t *testing.T) {
	t.Parallel()
	b := bus.NewLocal(1, nil, nil)
	defer b.Close()
	var got []string
	b.OnRunCompleted(func(e session.RunCompleted) { got = append(got, "a:"+e.RunID) })
	b.OnRunCompleted(func(e session.RunCompleted) { got = append(got, "b:"+e.RunID) })
	if err := b.PublishRunCompleted(context.Background(), session.RunCompleted{RunID: "r9"}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "a:r9" || got[1] != "b:r9" {
		t.Fatalf("got %v", got)
	}
}

// TestDurableLocalKeepsAcceptedRuns: runs accepted by a bus whose process
// dies (kill -9 in e2e's TestRunsSurviveServeKilled) are
// there at the next start on the same journal: the one a worker had taken
// up is reported interrupted, never run twice; the queued ones run; the
// finished one is not seen again.
func TestDurableLocalKeepsAcceptedRuns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.journal")
	first, err := bus.NewDurableLocal(1, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := make(chan string, 4)
	killed := make(chan struct{})
	first.SetHandler(func(ctx context.Context, e session.RunRequested) error {
		took <- e.RunID
		if e.RunID == "done" {
			return nil
		}
		<-killed // the process dies with the run under way
		return errors.New("killed")
	})
	t.Cleanup(func() { close(killed); first.Close() })
	for _, id := range []string{"done", "running", "queued-1", "queued-2"} {
		if err := first.PublishRunRequested(t.Context(), session.RunRequested{RunID: id, Code: "print(1)"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"done", "running"} {
		if got := <-took; got != want {
			t.Fatalf("first bus took %s, want %s", got, want)
		}
	}
	// The first process is killed here: it never closes its bus before
	// the second starts on the same journal.
	second, err := bus.NewDurableLocal(1, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	var mu sync.Mutex
	var ran, interrupted []string
	var wg sync.WaitGroup
	wg.Add(3)
	second.SetHandler(func(ctx context.Context, e session.RunRequested) error {
		defer wg.Done()
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, e.RunID)
		return nil
	})
	second.Resume(func(ctx context.Context, e session.RunRequested) error {
		defer wg.Done()
		mu.Lock()
		defer mu.Unlock()
		interrupted = append(interrupted, e.RunID)
		return nil
	})
	wg.Wait()
	slices.Sort(ran)
	if !slices.Equal(ran, []string{"queued-1", "queued-2"}) || !slices.Equal(interrupted, []string{"running"}) {
		t.Fatalf("after the restart: ran %v, interrupted %v", ran, interrupted)
	}
	if second.Close() != nil {
		t.Fatal("close")
	}
	// All were handled: a third start has nothing to resume.
	third, err := bus.NewDurableLocal(1, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	third.SetHandler(func(ctx context.Context, e session.RunRequested) error {
		t.Errorf("third start ran %s again", e.RunID)
		return nil
	})
	third.Resume(func(ctx context.Context, e session.RunRequested) error {
		t.Errorf("third start reported %s interrupted again", e.RunID)
		return nil
	})
}
