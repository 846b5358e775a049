package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeContext is one interpreter context of a fake sandbox.
type fakeContext struct {
	c        CodeContext
	restarts int
	vars     map[string]string
}

func (f *fakeSandboxes) CreateContext(ctx context.Context, id string, req ContextRequest) (CodeContext, error) {
	if err := f.enter(ctx, "CreateContext", id); err != nil {
		return CodeContext{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return CodeContext{}, err
	}
	if b.ctxs == nil {
		b.ctxs = map[string]*fakeContext{}
	}
	f.nextID++
	c := CodeContext{ID: fmt.Sprintf("ctx-%d", f.nextID), Language: req.Language, Cwd: req.Cwd}
	b.ctxs[c.ID] = &fakeContext{c: c}
	return c, nil
}

// fakeCtx returns a context of a sandbox; the caller holds mu.
func (f *fakeSandboxes) fakeCtx(id, contextID string) (*fakeBox, *fakeContext, error) {
	b, err := f.box(id)
	if err != nil {
		return nil, nil, err
	}
	c := b.ctxs[contextID]
	if c == nil {
		return nil, nil, fmt.Errorf("context %s: %w", contextID, ErrNotFound)
	}
	return b, c, nil
}

func (f *fakeSandboxes) RestartContext(ctx context.Context, id, contextID string) error {
	if err := f.enter(ctx, "RestartContext", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, c, err := f.fakeCtx(id, contextID)
	if err != nil {
		return err
	}
	c.restarts++
	c.vars = nil
	return nil
}

func (f *fakeSandboxes) RemoveContext(ctx context.Context, id, contextID string) error {
	if err := f.enter(ctx, "RemoveContext", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _, err := f.fakeCtx(id, contextID)
	if err != nil {
		return err
	}
	delete(b.ctxs, contextID)
	return nil
}

// contextIDs lists the contexts a fake sandbox holds.
func (f *fakeSandboxes) contextIDs(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(b.ctxs))
}

// contextExec makes executions fail as a provider does for a context the
// sandbox lacks, and records the contexts they ran in.
func (r *rig) contextExec() *[]string {
	var mu sync.Mutex
	var ran []string
	r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
		r.sbx.mu.Lock()
		defer r.sbx.mu.Unlock()
		b, err := r.sbx.box(id)
		if err != nil {
			return nil, err
		}
		if req.Context != "" && b.ctxs[req.Context] == nil {
			return nil, fmt.Errorf("run code: context %s: %w", req.Context, ErrNotFound)
		}
		mu.Lock()
		ran = append(ran, req.Context)
		mu.Unlock()
		return &ExecResult{Success: true}, nil
	}
	return &ran
}

func wantKind(t *testing.T, what string, err, kind error, detail string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: error %v, want %v", what, err, kind)
	}
	if !strings.Contains(err.Error(), detail) {
		t.Fatalf("%s: error %q does not say %q", what, err, detail)
	}
}

func TestContextLifecycle(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := t.Context()
	ran := r.contextExec()
	c, err := r.m.CreateContext(ctx, testKey, ContextRequest{Cwd: "work"})
	if err != nil {
		t.Fatal(err)
	}
	s := r.store.session(testKey)
	if c.Language != "python" || c.Cwd != "/home/user/work" || c.SandboxID != s.SandboxID || c.CreatedAt.IsZero() {
		t.Fatalf("created %+v in sandbox %s", c, s.SandboxID)
	}
	if got := r.sbx.contextIDs(s.SandboxID); !slices.Equal(got, []string{c.ID}) {
		t.Fatalf("sandbox holds contexts %v, want [%s]", got, c.ID)
	}
	list, err := r.m.ListContexts(ctx, testKey)
	if err != nil || len(list) != 1 || list[0] != *c {
		t.Fatalf("list = %+v, %v; want [%+v]", list, err, *c)
	}
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "x = 1", Context: c.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "x = 2"}, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*ran, []string{c.ID, ""}) {
		t.Fatalf("executions ran in contexts %q", *ran)
	}
	if err := r.m.ResetContext(ctx, testKey, c.ID); err != nil {
		t.Fatal(err)
	}
	if n := r.sbx.boxes[s.SandboxID].ctxs[c.ID].restarts; n != 1 {
		t.Fatalf("context restarted %d times, want 1", n)
	}
	if err := r.m.DeleteContext(ctx, testKey, c.ID); err != nil {
		t.Fatal(err)
	}
	if got := r.sbx.contextIDs(s.SandboxID); len(got) != 0 {
		t.Fatalf("sandbox still holds contexts %v", got)
	}
	_, err = r.m.Execute(ctx, testKey, ExecRequest{Code: "x", Context: c.ID}, nil)
	wantKind(t, "execute in a deleted context", err, ErrNotFound, fmt.Sprintf("context %q not found", c.ID))
	wantKind(t, "reset a deleted context", r.m.ResetContext(ctx, testKey, c.ID), ErrNotFound, c.ID)
	wantKind(t, "delete it again", r.m.DeleteContext(ctx, testKey, c.ID), ErrNotFound, c.ID)
}

func TestContextGone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		lose   func(r *rig, s *Session, c *CodeContext)
		detail string
		// starts is how many sandboxes the execution may create.
		starts int
		// listed is how many contexts a list shows afterwards: the record
		// cannot know of a context its live sandbox lost.
		listed int
	}{
		{"sandbox replaced behind our back", func(r *rig, s *Session, _ *CodeContext) { r.sbx.vanish(s.SandboxID) },
			"the session's sandbox was replaced at ", 1, 0},
		{"session stopped", func(r *rig, s *Session, _ *CodeContext) {
			if _, err := r.m.Stop(context.Background(), testKey); err != nil {
				panic(err)
			}
		}, "the session's sandbox was stopped", 0, 0},
		{"sandbox lost the context", func(r *rig, s *Session, c *CodeContext) {
			r.sbx.mu.Lock()
			delete(r.sbx.boxes[s.SandboxID].ctxs, c.ID)
			r.sbx.mu.Unlock()
		}, "the sandbox no longer has it", 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Config{})
			ctx := t.Context()
			r.contextExec()
			c, err := r.m.CreateContext(ctx, testKey, ContextRequest{})
			if err != nil {
				t.Fatal(err)
			}
			tc.lose(r, r.store.session(testKey), c)
			creates := r.sbx.count("Create")
			_, err = r.m.Execute(ctx, testKey, ExecRequest{Code: "x", Context: c.ID}, nil)
			wantKind(t, "execute", err, ErrGone, tc.detail)
			wantKind(t, "execute", err, ErrGone, "contexts from before are gone")
			if n := r.sbx.count("Create") - creates; n != tc.starts {
				t.Fatalf("the execution created %d sandboxes, want %d", n, tc.starts)
			}
			err = r.m.ResetContext(ctx, testKey, c.ID)
			if !errors.Is(err, ErrGone) {
				t.Fatalf("reset: %v, want gone", err)
			}
			if list, err := r.m.ListContexts(ctx, testKey); err != nil || len(list) != tc.listed {
				t.Fatalf("list after losing it = %+v, %v", list, err)
			}
			if err := r.m.DeleteContext(ctx, testKey, c.ID); err != nil {
				t.Fatalf("delete a gone context: %v", err)
			}
			_, err = r.m.Execute(ctx, testKey, ExecRequest{Code: "x", Context: c.ID}, nil)
			wantKind(t, "execute after delete", err, ErrNotFound, "not found")
		})
	}
}

func TestContextUnknown(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := t.Context()
	_, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "z=5", Context: "foo"}, nil)
	wantKind(t, "execute on an unknown session", err, ErrNotFound, `context "foo" not found`)
	if n := r.sbx.count("Create"); n != 0 {
		t.Fatalf("an unknown context started %d sandboxes", n)
	}
	_, err = r.m.ListContexts(ctx, testKey)
	wantKind(t, "list on an unknown session", err, ErrNotFound, `session "chat-1" not found`)
	wantKind(t, "delete on an unknown session", r.m.DeleteContext(ctx, testKey, "foo"), ErrNotFound, `session "chat-1" not found`)
	wantKind(t, "reset on an unknown session", r.m.ResetContext(ctx, testKey, "foo"), ErrNotFound, `session "chat-1" not found`)
	r.mustStart(t, ctx, testKey, StartOptions{})
	_, err = r.m.Execute(ctx, testKey, ExecRequest{Code: "z=5", Context: "foo"}, nil)
	wantKind(t, "execute on a running session", err, ErrNotFound, `context "foo" not found`)
	if list, err := r.m.ListContexts(ctx, testKey); err != nil || len(list) != 0 {
		t.Fatalf("list = %+v, %v; want none", list, err)
	}
}

func TestContextValidation(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := t.Context()
	cases := []struct {
		name   string
		req    ContextRequest
		detail string
	}{
		{"language", ContextRequest{Language: "py thon"}, "language must match"},
		{"cwd", ContextRequest{Cwd: "a\x00b"}, "cwd: path contains control characters"},
		{"long cwd", ContextRequest{Cwd: strings.Repeat("a", 5000)}, "cwd: path is longer than"},
	}
	for _, tc := range cases {
		_, err := r.m.CreateContext(ctx, testKey, tc.req)
		wantKind(t, tc.name, err, ErrInvalid, tc.detail)
	}
	wantKind(t, "delete", r.m.DeleteContext(ctx, testKey, "a/b"), ErrInvalid, "contextId must match")
	wantKind(t, "reset", r.m.ResetContext(ctx, testKey, ""), ErrInvalid, "contextId must match")
	if n := r.sbx.count("Create"); n != 0 {
		t.Fatalf("bad input started %d sandboxes", n)
	}
}

// TestContextLimitUnderRace creates twice the limit at once: exactly the
// limit is recorded, and the sandbox keeps no context the record lacks.
func TestContextLimitUnderRace(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := t.Context()
	r.mustStart(t, ctx, testKey, StartOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, 2*MaxContexts)
	for range 2 * MaxContexts {
		wg.Go(func() {
			if _, err := r.m.CreateContext(ctx, testKey, ContextRequest{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrLimit) && !errors.Is(err, ErrConflict) {
			t.Fatalf("a create failed with %v", err)
		}
	}
	s := r.store.session(testKey)
	recorded := []string{}
	for _, c := range s.Contexts {
		recorded = append(recorded, c.ID)
	}
	slices.Sort(recorded)
	if len(recorded) > MaxContexts {
		t.Fatalf("%d contexts recorded, more than %d", len(recorded), MaxContexts)
	}
	if got := r.sbx.contextIDs(s.SandboxID); !slices.Equal(got, recorded) {
		t.Fatalf("sandbox holds %v, record %v", got, recorded)
	}
	// Filled up sequentially, the next one is refused with the limit named.
	for range MaxContexts - len(recorded) {
		if _, err := r.m.CreateContext(ctx, testKey, ContextRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := r.m.CreateContext(ctx, testKey, ContextRequest{})
	wantKind(t, "one past the limit", err, ErrLimit, fmt.Sprintf("already has %d contexts", MaxContexts))
}

// TestContextRecordBounded: across many replaced sandboxes the record keeps
// the live contexts and at most maxStaleContexts of earlier ones, newest
// first kept, so it cannot grow without bound.
func TestContextRecordBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := t.Context()
	var all []string
	for range 3 * maxStaleContexts {
		c, err := r.m.CreateContext(ctx, testKey, ContextRequest{})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c.ID)
		r.sbx.vanish(r.store.session(testKey).SandboxID)
	}
	live, err := r.m.CreateContext(ctx, testKey, ContextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	s := r.store.session(testKey)
	var kept []string
	for _, c := range s.Contexts {
		kept = append(kept, c.ID)
	}
	want := append(slices.Clone(all[len(all)-maxStaleContexts+1:]), live.ID)
	if !slices.Equal(kept, want) {
		t.Fatalf("record keeps %v, want the newest stale ones and the live one %v", kept, want)
	}
	_, err = r.m.Execute(ctx, testKey, ExecRequest{Code: "x", Context: all[len(all)-1]}, nil)
	wantKind(t, "the newest stale context", err, ErrGone, "replaced at")
	_, err = r.m.Execute(ctx, testKey, ExecRequest{Code: "x", Context: all[0]}, nil)
	wantKind(t, "a pruned context", err, ErrNotFound, "not found")
}

// TestContextPastDeadlines: past its idle deadline, before the reaper acts,
// a session still uses its sandbox, so its contexts work and are listed;
// past its lifetime the next call replaces the sandbox, so they are gone.
func TestContextPastDeadlines(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{IdleTimeout: time.Minute, Lifetime: time.Hour})
	ctx := t.Context()
	r.contextExec()
	c, err := r.m.CreateContext(ctx, testKey, ContextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(2 * time.Minute)
	if list, err := r.m.ListContexts(ctx, testKey); err != nil || len(list) != 1 {
		t.Fatalf("list past the idle deadline = %+v, %v", list, err)
	}
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "x", Context: c.ID}, nil); err != nil {
		t.Fatalf("execute past the idle deadline: %v", err)
	}
	r.clock.Advance(time.Hour)
	if list, err := r.m.ListContexts(ctx, testKey); err != nil || len(list) != 0 {
		t.Fatalf("list past the lifetime = %+v, %v", list, err)
	}
	creates := r.sbx.count("Create")
	_, err = r.m.Execute(ctx, testKey, ExecRequest{Code: "x", Context: c.ID}, nil)
	wantKind(t, "execute past the lifetime", err, ErrGone, "is gone")
	if n := r.sbx.count("Create") - creates; n != 0 {
		t.Fatalf("a gone context started %d sandboxes", n)
	}
}

// TestContextRecordWriteFails: a context the store could not record is
// removed from the sandbox again, so none runs unknown to the session, and
// the failure is not the caller's.
func TestContextRecordWriteFails(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := t.Context()
	s := r.mustStart(t, ctx, testKey, StartOptions{})
	r.store.fail = func(op string) error {
		if op == "UpdateSession" {
			return fmt.Errorf("dynamodb: %w", ErrUnavailable)
		}
		return nil
	}
	_, err := r.m.CreateContext(ctx, testKey, ContextRequest{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("create with a failing store: %v", err)
	}
	if got := r.sbx.contextIDs(s.SandboxID); len(got) != 0 {
		t.Fatalf("the sandbox kept unrecorded contexts %v", got)
	}
	if n := r.sbx.count("RemoveContext"); n != 1 {
		t.Fatalf("%d removals, want 1", n)
	}
}

// TestContextSandboxReplacedDuringCreate: when another call replaces the
// session's sandbox while a context is being created in the old one, the
// create says the context is gone and removes it, and the record names no
// context of the new sandbox that it does not have.
func TestContextSandboxReplacedDuringCreate(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := t.Context()
	old := r.mustStart(t, ctx, testKey, StartOptions{})
	r.sbx.fail = func(op, id string) error {
		if op == "CreateContext" {
			s := r.store.session(testKey)
			s.SandboxID, s.Version = "sbx-other", s.Version+1
			r.store.put(s)
		}
		return nil
	}
	_, err := r.m.CreateContext(ctx, testKey, ContextRequest{})
	wantKind(t, "create across a replacement", err, ErrGone, "replaced or stopped while it was being created")
	if got := r.sbx.contextIDs(old.SandboxID); len(got) != 0 {
		t.Fatalf("the old sandbox kept contexts %v", got)
	}
	if s := r.store.session(testKey); len(s.Contexts) != 0 {
		t.Fatalf("the record names contexts %+v", s.Contexts)
	}
}
