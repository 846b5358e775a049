package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/blob"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// These tests run the Manager on the real DynamoDB store (against the
// in-process emulator) and the real S3 adapter (against the in-process S3
// server); only the sandbox provider is the fake.

// countingStore counts session reads and writes of the real store.
type countingStore struct {
	session.Store
	reads, writes atomic.Int64
}

func (c *countingStore) GetSession(ctx context.Context, k session.Key) (*session.Session, error) {
	c.reads.Add(1)
	return c.Store.GetSession(ctx, k)
}

func (c *countingStore) CreateSession(ctx context.Context, s *session.Session) error {
	c.writes.Add(1)
	return c.Store.CreateSession(ctx, s)
}

func (c *countingStore) UpdateSession(ctx context.Context, s *session.Session) error {
	c.writes.Add(1)
	return c.Store.UpdateSession(ctx, s)
}

type realRig struct {
	ddb   *dynamodb.Client
	table string
	m     *session.Manager
	store *countingStore
	sbx   *session.FakeSandboxes
	clock *testclock.Clock
	bus   *memBus
}

type memBus struct {
	mu        sync.Mutex
	requested []session.RunRequested
	completed []session.RunCompleted
}

func (b *memBus) PublishRunRequested(ctx context.Context, e session.RunRequested) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requested = append(b.requested, e)
	return nil
}

func (b *memBus) PublishRunCompleted(ctx context.Context, e session.RunCompleted) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.completed = append(b.completed, e)
	return nil
}

var tableSeq atomic.Int64

func newRealRig(t testing.TB, cfg session.Config) *realRig {
	t.Helper()
	ctx := t.Context()
	ddbURL, stopDDB, err := localaws.StartDynamoDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopDDB)
	s3URL, stopS3, err := localaws.StartS3(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopS3)
	// Connections the SDK dialed but never used look busy to the server's
	// Shutdown for 5s; closing them first keeps the teardown quick.
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	ddb := localaws.DynamoDBClient(ddbURL, func(o *dynamodb.Options) { o.HTTPClient = hc })
	table := fmt.Sprintf("sessions-%d", tableSeq.Add(1))
	if err := store.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	s3c := localaws.S3Client(s3URL)
	if err := localaws.EnsureBucket(ctx, s3c, "transfers"); err != nil {
		t.Fatal(err)
	}
	clock := session.NewFakeClock()
	r := &realRig{
		ddb:   ddb,
		table: table,
		store: &countingStore{Store: store.New(ddb, table, store.WithClock(clock))},
		sbx:   session.NewFakeSandboxes(clock),
		clock: clock,
		bus:   &memBus{},
	}
	cfg.StackID = "stack-real"
	cfg.DisableWorkspaces = true // the fake sandboxes cannot walk a workspace
	if cfg.Tenant == "" {
		cfg.Tenant = "acme"
	}
	r.m, err = session.NewManager(cfg, session.Deps{Store: r.store, Sandboxes: r.sbx, Blobs: blob.New(s3c, "transfers"), Bus: r.bus, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var key = session.Key{Tenant: "acme", Principal: "alice", SessionID: "chat-1"}

func TestRealStoreLifecycle(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{})
	ctx := t.Context()
	res, err := r.m.Execute(ctx, key, session.ExecRequest{Code: "print hi"}, nil)
	if err != nil || res.Stdout != "hi\n" || res.Restarted {
		t.Fatalf("%+v %v", res, err)
	}
	st, err := r.m.Status(ctx, key)
	if err != nil || st.State != session.StateRunning || st.Version != 2 {
		t.Fatalf("status %+v %v", st, err)
	}
	if _, err := r.m.Stop(ctx, key); err != nil {
		t.Fatal(err)
	}
	res, err = r.m.Execute(ctx, key, session.ExecRequest{Code: "print again"}, nil)
	if err != nil || !res.Restarted {
		t.Fatalf("after stop %+v %v", res, err)
	}
	first, _ := r.m.Status(ctx, key)
	r.sbx.Vanish(first.SandboxID)
	res, err = r.m.Execute(ctx, key, session.ExecRequest{Code: "print x"}, nil)
	if err != nil || !res.Restarted {
		t.Fatalf("after vanish %+v %v", res, err)
	}
	if live := r.sbx.Live(); len(live) != 1 {
		t.Fatalf("live %v", live)
	}
	list, next, err := r.m.List(ctx, "acme", "alice", 10, "")
	if err != nil || len(list) != 1 || next != "" {
		t.Fatalf("list %+v %q %v", list, next, err)
	}
}

func TestRealStoreConcurrentExecutes(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{})
	r.sbx.SetDelay(50 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if _, err := r.m.Execute(t.Context(), key, session.ExecRequest{Code: fmt.Sprint("print ", i)}, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := r.sbx.Count("Create"); n != 1 {
		t.Fatalf("creates %d", n)
	}
}

func TestRealStoreThrottledActivity(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{})
	ctx := t.Context()
	if _, err := r.m.Start(ctx, key, session.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	r.store.reads.Store(0)
	r.store.writes.Store(0)
	for range 10 {
		r.clock.Advance(time.Second)
		if _, err := r.m.Execute(ctx, key, session.ExecRequest{Code: "print x"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if r.store.reads.Load() != 10 || r.store.writes.Load() != 0 {
		t.Fatalf("reads %d writes %d", r.store.reads.Load(), r.store.writes.Load())
	}
	r.clock.Advance(30 * time.Second)
	if _, err := r.m.Execute(ctx, key, session.ExecRequest{Code: "print x"}, nil); err != nil {
		t.Fatal(err)
	}
	if r.store.writes.Load() != 1 {
		t.Fatalf("writes %d", r.store.writes.Load())
	}
}

func TestRealStoreReaper(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{})
	ctx := t.Context()
	for i, pause := range []bool{false, true, false} {
		k := key
		k.SessionID = fmt.Sprint("s", i)
		if _, err := r.m.Start(ctx, k, session.StartOptions{Pause: pause}); err != nil {
			t.Fatal(err)
		}
	}
	stopped := key
	stopped.SessionID = "s2"
	if _, err := r.m.Stop(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	if rep, err := r.m.Reap(ctx); err != nil || rep != (session.ReapReport{}) {
		t.Fatalf("nothing due: %+v %v", rep, err)
	}
	r.clock.Advance(31 * time.Minute)
	var wg sync.WaitGroup
	reps := make([]session.ReapReport, 3)
	for i := range reps {
		wg.Go(func() {
			rep, err := r.m.Reap(ctx)
			if err != nil {
				t.Error(err)
			}
			reps[i] = rep
		})
	}
	wg.Wait()
	var total session.ReapReport
	for _, rep := range reps {
		total.Paused += rep.Paused
		total.Killed += rep.Killed
		total.Errors += rep.Errors
	}
	if total != (session.ReapReport{Paused: 1, Killed: 1}) {
		t.Fatalf("overlapping ticks: %+v", total)
	}
	paused := key
	paused.SessionID = "s1"
	res, err := r.m.Execute(ctx, paused, session.ExecRequest{Code: "print back"}, nil)
	if err != nil || res.Restarted || r.sbx.Count("Connect") != 1 {
		t.Fatalf("resume %+v %v", res, err)
	}
}

func TestRealStoreRuns(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{})
	ctx := t.Context()
	run, err := r.m.SubmitRun(ctx, key, session.RunRequest{Code: "print run", IdempotencyKey: "job-7"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.m.SubmitRun(ctx, key, session.RunRequest{Code: "print run", IdempotencyKey: "job-7"})
	if err != nil || again.ID != run.ID {
		t.Fatalf("repeat %+v %v", again, err)
	}
	var wg sync.WaitGroup
	for _, ev := range r.bus.requested {
		wg.Go(func() {
			// The delivery that finds the other one running is told to
			// come back later.
			if _, err := r.m.ProcessRun(ctx, ev); err != nil && !errors.Is(err, session.ErrConflict) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := r.sbx.Count("Execute"); n != 1 {
		t.Fatalf("executed %d times", n)
	}
	got, err := r.m.GetRun(ctx, "acme", "alice", run.ID)
	if err != nil || got.Status != session.RunSucceeded || got.Result.Stdout != "run\n" {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := r.m.GetRun(ctx, "acme", "bob", run.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("other principal: %v", err)
	}
}

func TestRealTransfers(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{})
	ctx := t.Context()
	payload := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	ticket, err := r.m.UploadURL(ctx, key, "data/blob.bin", int64(len(payload)), "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, ticket.Request.Method, ticket.Request.URL, bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range ticket.Request.Headers {
		req.Header.Set(k, v)
	}
	req.ContentLength = int64(len(payload))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload status %d", resp.StatusCode)
	}
	e, err := r.m.Import(ctx, key, ticket.TransferID)
	if err != nil || e.Size != int64(len(payload)) {
		t.Fatalf("import %+v %v", e, err)
	}
	st, _ := r.m.Status(ctx, key)
	if !bytes.Equal(r.sbx.File(st.SandboxID, "/home/user/data/blob.bin"), payload) {
		t.Fatal("imported bytes differ")
	}
	other := key
	other.Principal = "mallory"
	if _, err := r.m.Import(ctx, other, ticket.TransferID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("another principal's import: %v", err)
	}

	d, err := r.m.DownloadURL(ctx, key, "data/blob.bin")
	if err != nil || d.SizeBytes != int64(len(payload)) {
		t.Fatalf("download %+v %v", d, err)
	}
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(body, payload) {
		t.Fatalf("downloaded %d bytes, %v", len(body), err)
	}

	r.clock.Advance(time.Second) // the import happened before this execution
	res, err := r.m.Execute(ctx, key, session.ExecRequest{Code: "write /home/user/report.txt hello"}, nil)
	if err != nil || len(res.Artifacts) != 1 || !strings.HasSuffix(res.Artifacts[0].Path, "report.txt") {
		t.Fatalf("artifacts %+v %v", res, err)
	}
}

func TestRealAuthenticate(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{Tenant: "acme"})
	ctx := t.Context()
	plain, k, err := session.NewAPIKey("acme", "alice", r.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.store.PutAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if got, err := r.m.Authenticate(ctx, plain); err != nil || got.Principal != "alice" {
		t.Fatalf("%+v %v", got, err)
	}
	foreign, fk, err := session.NewAPIKey("globex", "alice", r.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.store.PutAPIKey(ctx, fk); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Authenticate(ctx, foreign); !errors.Is(err, session.ErrUnauthorized) {
		t.Fatalf("another tenant's key: %v", err)
	}
	if err := r.store.RevokeAPIKey(ctx, k.Hash, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Authenticate(ctx, plain); !errors.Is(err, session.ErrUnauthorized) {
		t.Fatalf("revoked: %v", err)
	}
}

func TestRealStoreLeaseTakeoverAndStaleStart(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{})
	ctx := t.Context()
	now := r.clock.Now()
	dead := func(id string) session.Key {
		k := key
		k.SessionID = id
		if err := r.store.CreateSession(ctx, &session.Session{Key: k, State: session.StateStarting, LeaseOwner: "dead",
			LeaseUntil: now.Add(time.Minute), DueAt: now.Add(time.Minute), CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		return k
	}
	waiting, stale := dead("waiting"), dead("stale")

	r.store.reads.Store(0)
	done := make(chan error, 1)
	go func() {
		_, err := r.m.Execute(ctx, waiting, session.ExecRequest{Code: "print x"}, nil)
		done <- err
	}()
	// Two reads mean the caller found the lease held and polled again
	// instead of taking the session over.
	for r.store.reads.Load() < 2 {
		select {
		case err := <-done:
			t.Fatalf("returned under a held lease: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	if n := r.sbx.Count("Create"); n != 0 {
		t.Fatalf("created a sandbox under a held lease")
	}
	r.clock.Advance(61 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The other dead start is found through the deadline index and cleared.
	if _, err := r.m.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := r.store.GetSession(ctx, stale)
	if err != nil || s.State != session.StateError || !s.DueAt.IsZero() {
		t.Fatalf("stale start %+v %v", s, err)
	}
	if n := r.sbx.Count("Create"); n != 1 {
		t.Fatalf("creates %d", n)
	}
}

func TestRealStoreReaperSkipsDamagedRecords(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{})
	ctx := t.Context()
	if _, err := r.m.Start(ctx, key, session.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// A record on the deadline index whose times cannot be parsed: it is
	// due before the good session, so it comes back first.
	due := r.clock.Now().Add(-time.Hour)
	_, err := r.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.table), Item: map[string]types.AttributeValue{
		"pk":        &types.AttributeValueMemberS{Value: "T#acme#P#alice"},
		"sk":        &types.AttributeValueMemberS{Value: "S#damaged"},
		"state":     &types.AttributeValueMemberS{Value: "running"},
		"createdAt": &types.AttributeValueMemberS{Value: "yesterday-ish"},
		"dueTime":   &types.AttributeValueMemberS{Value: "soon"},
		"dueShard":  &types.AttributeValueMemberS{Value: "DUE#0"},
		"dueAt":     &types.AttributeValueMemberN{Value: fmt.Sprint(due.Unix())},
		"version":   &types.AttributeValueMemberN{Value: "1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(31 * time.Minute)

	got, err := r.store.DueSessions(ctx, r.clock.Now(), 10)
	skipped, ok := errors.AsType[*session.SkippedRecordsError](err)
	if !ok || len(skipped.Records) != 1 || !strings.Contains(skipped.Records[0], "S#damaged") {
		t.Fatalf("err = %v, want the damaged record named", err)
	}
	if len(got) != 1 || got[0].SessionID != key.SessionID {
		t.Fatalf("due %+v, want the readable session", got)
	}
	rep, err := r.m.Reap(ctx)
	if err != nil || rep != (session.ReapReport{Killed: 1, Errors: 1}) {
		t.Fatalf("reap %+v %v", rep, err)
	}
	if st, err := r.m.Status(ctx, key); err != nil || st.State != session.StateStopped {
		t.Fatalf("readable session %+v %v", st, err)
	}
}

func TestRealStoreRunWithHugeExceptionEnds(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{})
	ctx := t.Context()
	r.sbx.SetExecFn(func(ctx context.Context, id string, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
		huge := strings.Repeat("v", 2<<20)
		return &session.ExecResult{Error: &session.ExecError{Name: "ValueError", Value: huge, Traceback: huge}}, nil
	})
	ev := session.RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "raise ValueError('v' * 2**21)", RunID: "loud"}
	if _, err := r.m.ProcessRun(ctx, ev); err != nil {
		t.Fatal(err)
	}
	got, err := r.m.GetRun(ctx, "acme", "alice", "loud")
	if err != nil || got.Status != session.RunFailed || len(got.Error) > 4<<10 || got.Result == nil || !got.Result.Truncated {
		t.Fatalf("run %s, %d bytes of error, %v", got.Status, len(got.Error), err)
	}
	// A redelivery finds it finished.
	if again, err := r.m.ProcessRun(ctx, ev); err != nil || again.Status != session.RunFailed || r.sbx.Count("Execute") != 1 {
		t.Fatalf("redelivery %+v %v", again, err)
	}
}

// TestRealStoreRefusedFirstStartLeavesNoRecord: a new session whose first
// start the tenant's cap refuses (429) is not left behind as a stopped
// session; once a slot is free the same id starts at once.
func TestRealStoreRefusedFirstStartLeavesNoRecord(t *testing.T) {
	t.Parallel()
	r := newRealRig(t, session.Config{MaxLiveSandboxesPerTenant: 1})
	ctx := t.Context()
	if _, err := r.m.Start(ctx, key, session.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := session.Key{Tenant: "acme", Principal: "alice", SessionID: "refused"}
	if _, err := r.m.Start(ctx, refused, session.StartOptions{}); !errors.Is(err, session.ErrLimit) {
		t.Fatalf("start past the cap: %v, want ErrLimit", err)
	}
	if st, err := r.m.Status(ctx, refused); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("status of the refused session: %+v %v, want not found", st, err)
	}
	if _, err := r.m.Stop(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Start(ctx, refused, session.StartOptions{}); err != nil {
		t.Fatalf("start once a slot is free: %v", err)
	}
}
