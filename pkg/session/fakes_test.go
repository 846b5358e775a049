package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
)

// The fakes below follow the contracts of ports.go closely (conditional
// writes on versions, the documented errors) and let tests inject faults:
// each has a fail hook consulted before every operation.

// newFakeClock is the Manager tests' clock, at a fixed start so failures
// reproduce.
func newFakeClock() *testclock.Clock {
	return testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

type fakeFile struct {
	data  []byte
	mtime time.Time
}

type fakeBox struct {
	info   SandboxInfo
	files  map[string]fakeFile
	execs  int // executions since the kernel started
	resets int
	ctxs   map[string]*fakeContext // interpreter contexts by id
	vars   map[string]string       // the default context's variables
}

// fakeSandboxes is an in-memory provider. Execute runs tiny scripts: each
// line "print X" prints X, "write PATH TEXT" writes a file, "fail" raises.
type fakeSandboxes struct {
	mu      sync.Mutex
	clock   Clock
	boxes   map[string]*fakeBox
	nextID  int
	calls   map[string]int
	delay   time.Duration // every Create takes this long
	fail    func(op, id string) error
	execFn  func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error)
	lastCmd []string
	cmdFn   func(ctx context.Context, cmd string) (ShellOutcome, error)
	specs   []SandboxSpec
	timeout map[string]time.Duration
	samples map[string][]SandboxMetric // Metrics' answers by sandbox
	// shells are the background processes per sandbox, by tag; shellFn,
	// when set, runs foreground commands (fakes_commands_test.go).
	shells  map[string]map[string]*fakeShell
	shellFn func(ctx context.Context, c ShellCommand, onEvent func(Event)) (ShellResult, error)
}

func newFakeSandboxes(clock Clock) *fakeSandboxes {
	return &fakeSandboxes{clock: clock, boxes: map[string]*fakeBox{}, calls: map[string]int{}, timeout: map[string]time.Duration{}}
}

func (f *fakeSandboxes) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// enter counts op and asks the fault hook. Like a real client, it refuses
// to start a call whose context is done.
func (f *fakeSandboxes) enter(ctx context.Context, op, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, id, err)
	}
	f.mu.Lock()
	f.calls[op]++
	fail := f.fail
	f.mu.Unlock()
	if fail != nil {
		return fail(op, id)
	}
	return nil
}

// holdPauses makes every Pause wait inside the provider until gate is
// closed; entered closes when the first one arrives.
func (f *fakeSandboxes) holdPauses() (entered <-chan struct{}, gate chan struct{}) {
	in, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.fail = func(op, _ string) error {
		if op == "Pause" {
			once.Do(func() { close(in) })
			<-gate
		}
		return nil
	}
	return in, gate
}

// holdCreates makes Create wait inside the provider until n calls have
// arrived, so n racing starts are all inside Create, holding their slots,
// at once; a Create still alone after 10 s fails.
func (f *fakeSandboxes) holdCreates(n int32) {
	var arrived atomic.Int32
	all := make(chan struct{})
	f.fail = func(op, _ string) error {
		if op != "Create" {
			return nil
		}
		if arrived.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("not every racer reached Create")
		}
	}
}

// box returns a sandbox or ErrSandboxGone; the caller holds mu.
func (f *fakeSandboxes) box(id string) (*fakeBox, error) {
	b, ok := f.boxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %s: %w", id, ErrSandboxGone)
	}
	return b, nil
}

// vanish removes a sandbox behind the Manager's back.
func (f *fakeSandboxes) vanish(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.boxes, id)
}

func (f *fakeSandboxes) live() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.boxes))
}

// add puts a sandbox there directly (orphan tests).
func (f *fakeSandboxes) add(info SandboxInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.boxes[info.ID] = &fakeBox{info: info, files: map[string]fakeFile{}}
}

func (f *fakeSandboxes) Create(ctx context.Context, spec SandboxSpec) (SandboxInfo, error) {
	if err := f.enter(ctx, "Create", ""); err != nil {
		return SandboxInfo{}, err
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return SandboxInfo{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	id := fmt.Sprintf("sbx-%d", f.nextID)
	info := SandboxInfo{ID: id, Template: spec.Template, State: StateRunning, Metadata: maps.Clone(spec.Metadata), StartedAt: f.clock.Now()}
	f.boxes[id] = &fakeBox{info: info, files: map[string]fakeFile{}}
	f.specs = append(f.specs, spec)
	f.timeout[id] = spec.Timeout
	return info, nil
}

func (f *fakeSandboxes) Connect(ctx context.Context, id string, timeout time.Duration) (SandboxInfo, error) {
	if err := f.enter(ctx, "Connect", id); err != nil {
		return SandboxInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return SandboxInfo{}, err
	}
	b.info.State = StateRunning
	f.timeout[id] = timeout
	return b.info, nil
}

func (f *fakeSandboxes) Get(ctx context.Context, id string) (SandboxInfo, error) {
	if err := f.enter(ctx, "Get", id); err != nil {
		return SandboxInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return SandboxInfo{}, err
	}
	return b.info, nil
}

func (f *fakeSandboxes) List(ctx context.Context, md map[string]string) ([]SandboxInfo, error) {
	if err := f.enter(ctx, "List", ""); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []SandboxInfo
	for _, b := range f.boxes {
		match := true
		for k, v := range md {
			match = match && b.info.Metadata[k] == v
		}
		if match {
			out = append(out, b.info)
		}
	}
	return out, nil
}

func (f *fakeSandboxes) Kill(ctx context.Context, id string) error {
	if err := f.enter(ctx, "Kill", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.boxes, id)
	return nil
}

func (f *fakeSandboxes) Pause(ctx context.Context, id string) error {
	if err := f.enter(ctx, "Pause", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return err
	}
	b.info.State = StatePaused
	return nil
}

func (f *fakeSandboxes) SetTimeout(ctx context.Context, id string, timeout time.Duration) error {
	if err := f.enter(ctx, "SetTimeout", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.box(id); err != nil {
		return err
	}
	f.timeout[id] = timeout
	return nil
}

func (f *fakeSandboxes) Execute(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
	if err := f.enter(ctx, "Execute", id); err != nil {
		return nil, err
	}
	if f.execFn != nil {
		return f.execFn(ctx, id, req, onEvent)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return nil, err
	}
	if b.info.State == StatePaused {
		return nil, fmt.Errorf("sandbox %s is paused: %w", id, ErrUnavailable)
	}
	vars := &b.vars
	if req.Context != "" {
		c := b.ctxs[req.Context]
		if c == nil {
			return nil, fmt.Errorf("run code: context %s: %w", req.Context, ErrNotFound)
		}
		vars = &c.vars
	}
	if *vars == nil {
		*vars = map[string]string{}
	}
	b.execs++
	res := &ExecResult{Success: true, ExecutionCount: b.execs}
	emit := func(e Event) {
		if onEvent != nil {
			onEvent(e)
		}
	}
	for line := range strings.Lines(req.Code) {
		f.interpret(b, *vars, strings.TrimSpace(line), req.TimeoutSecs, res, emit)
	}
	return res, nil
}

// interpret runs one line of the fake's language: "print X", "write PATH
// TEXT", "set NAME VALUE", "get NAME" (prints it; a NameError when
// unbound), "sleep SECS" (takes no time, but times out past TimeoutSecs)
// and "fail" (a ValueError). The caller holds mu.
func (f *fakeSandboxes) interpret(b *fakeBox, vars map[string]string, line string, timeoutSecs int, res *ExecResult, emit func(Event)) {
	word, rest, _ := strings.Cut(line, " ")
	raise := func(name, value string) {
		res.Success = false
		res.Error = &ExecError{Name: name, Value: value, Traceback: "Traceback..."}
		emit(Event{Error: res.Error})
	}
	switch word {
	case "print":
		res.Stdout += rest + "\n"
		emit(Event{Stdout: rest + "\n"})
	case "write":
		path, text, _ := strings.Cut(rest, " ")
		b.files[path] = fakeFile{data: []byte(text), mtime: f.clock.Now()}
	case "set":
		name, value, _ := strings.Cut(rest, " ")
		vars[name] = value
	case "get":
		value, ok := vars[rest]
		if !ok {
			raise("NameError", fmt.Sprintf("name '%s' is not defined", rest))
			return
		}
		res.Stdout += value + "\n"
		emit(Event{Stdout: value + "\n"})
	case "sleep":
		if secs, _ := strconv.Atoi(rest); timeoutSecs > 0 && secs > timeoutSecs {
			res.TimedOut = true
			raise("TimeoutError", "execution timed out")
		}
	case "fail":
		raise("ValueError", "boom")
	}
}

func (f *fakeSandboxes) ResetKernel(ctx context.Context, id string) error {
	if err := f.enter(ctx, "ResetKernel", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return err
	}
	b.execs = 0
	b.resets++
	b.vars = nil
	return nil
}

func (f *fakeSandboxes) RunCommand(ctx context.Context, id, cmd string, timeout time.Duration, onEvent func(Event)) (ShellOutcome, error) {
	if err := f.enter(ctx, "RunCommand", id); err != nil {
		return ShellOutcome{}, err
	}
	f.mu.Lock()
	if _, err := f.box(id); err != nil {
		f.mu.Unlock()
		return ShellOutcome{}, err
	}
	f.lastCmd = append(f.lastCmd, cmd)
	fn := f.cmdFn
	f.mu.Unlock()
	if fn == nil {
		// echo prints its words; anything else reads as a pip install.
		fn = func(_ context.Context, cmd string) (ShellOutcome, error) {
			if words, ok := strings.CutPrefix(cmd, "echo "); ok {
				return ShellOutcome{Stdout: words + "\n"}, nil
			}
			return ShellOutcome{Stdout: "Successfully installed\n"}, nil
		}
	}
	res, err := fn(ctx, cmd)
	if onEvent != nil && res.Stderr != "" {
		onEvent(Event{Stderr: res.Stderr})
	}
	if onEvent != nil && res.Stdout != "" {
		onEvent(Event{Stdout: res.Stdout})
	}
	return res, err
}

func (f *fakeSandboxes) ListFiles(ctx context.Context, id, dir string, depth int) ([]FileEntry, error) {
	if err := f.enter(ctx, "ListFiles", id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return nil, err
	}
	var out []FileEntry
	for p, file := range b.files {
		rel, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/")
		if ok && strings.Count(rel, "/") < depth {
			out = append(out, FileEntry{Name: p[strings.LastIndex(p, "/")+1:], Path: p, Type: "file", Size: int64(len(file.data)), ModifiedAt: file.mtime})
		}
	}
	slices.SortFunc(out, func(a, b FileEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func (f *fakeSandboxes) StatFile(ctx context.Context, id, p string) (FileEntry, error) {
	if err := f.enter(ctx, "StatFile", id); err != nil {
		return FileEntry{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return FileEntry{}, err
	}
	file, ok := b.files[p]
	if !ok {
		for q := range b.files {
			if strings.HasPrefix(q, p+"/") {
				return FileEntry{Path: p, Type: "dir"}, nil
			}
		}
		return FileEntry{}, Errorf(ErrNotFound, "no file %s", p)
	}
	return FileEntry{Path: p, Type: "file", Size: int64(len(file.data)), ModifiedAt: file.mtime}, nil
}

func (f *fakeSandboxes) ReadFile(ctx context.Context, id, p string) (io.ReadCloser, error) {
	if err := f.enter(ctx, "ReadFile", id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return nil, err
	}
	file, ok := b.files[p]
	if !ok {
		return nil, Errorf(ErrNotFound, "no file %s", p)
	}
	return io.NopCloser(bytes.NewReader(file.data)), nil
}

func (f *fakeSandboxes) WriteFile(ctx context.Context, id, p string, r io.Reader) error {
	if err := f.enter(ctx, "WriteFile", id); err != nil {
		return err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return err
	}
	b.files[p] = fakeFile{data: data, mtime: f.clock.Now()}
	return nil
}

func (f *fakeSandboxes) RemoveFile(ctx context.Context, id, p string) error {
	if err := f.enter(ctx, "RemoveFile", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.box(id)
	if err != nil {
		return err
	}
	// As in E2B, removing what is not there succeeds, and a directory
	// goes with everything under it.
	for q := range b.files {
		if q == p || strings.HasPrefix(q, strings.TrimSuffix(p, "/")+"/") {
			delete(b.files, q)
		}
	}
	return nil
}

func (f *fakeSandboxes) file(id, p string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.boxes[id]
	if !ok {
		return nil, false
	}
	file, ok := b.files[p]
	return file.data, ok
}

// fakeBlobs keeps objects in memory; presigned URLs are fake but carry the
// key, size and TTL so tests can check them.
type fakeBlobs struct {
	mu      sync.Mutex
	clock   Clock
	objects map[string][]byte
	puts    []string
	// failPut, when set, is the error of every Put.
	failPut error
}

func newFakeBlobs(clock Clock) *fakeBlobs {
	return &fakeBlobs{clock: clock, objects: map[string][]byte{}}
}

func (f *fakeBlobs) PresignPut(ctx context.Context, key string, size int64, contentType string, ttl time.Duration) (PresignedRequest, error) {
	return PresignedRequest{URL: "https://blobs.test/" + key + "?put", Method: "PUT",
		Headers:   map[string]string{"Content-Length": fmt.Sprint(size), "Content-Type": contentType},
		ExpiresAt: f.clock.Now().Add(ttl)}, nil
}

func (f *fakeBlobs) PresignGet(ctx context.Context, key string, ttl time.Duration) (PresignedRequest, error) {
	return PresignedRequest{URL: "https://blobs.test/" + key, Method: "GET", ExpiresAt: f.clock.Now().Add(ttl)}, nil
}

func (f *fakeBlobs) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.objects[key]
	if !ok {
		return nil, 0, Errorf(ErrNotFound, "no object %s", key)
	}
	return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
}

func (f *fakeBlobs) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if size >= 0 && int64(len(data)) != size {
		return fmt.Errorf("put %s: got %d bytes, declared %d", key, len(data), size)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failPut != nil {
		return f.failPut
	}
	f.objects[key] = data
	f.puts = append(f.puts, key)
	return nil
}

func (f *fakeBlobs) Delete(ctx context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, key)
	return nil
}

func (f *fakeBlobs) object(key string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.objects[key]
	return b, ok
}

func (f *fakeBlobs) set(key string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key] = data
}

type fakeBus struct {
	mu        sync.Mutex
	requested []RunRequested
	completed []RunCompleted
	fail      error
}

func (f *fakeBus) PublishRunRequested(ctx context.Context, e RunRequested) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.requested = append(f.requested, e)
	return nil
}

func (f *fakeBus) PublishRunCompleted(ctx context.Context, e RunCompleted) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.completed = append(f.completed, e)
	return nil
}

// rig is a Manager on fakes.
type rig struct {
	m     *Manager
	store *fakeStore
	sbx   *fakeSandboxes
	blobs *fakeBlobs
	bus   *fakeBus
	clock *testclock.Clock
}

func newRig(t interface{ Fatal(...any) }, cfg Config) *rig {
	clock := newFakeClock()
	r := &rig{store: newFakeStore(clock), sbx: newFakeSandboxes(clock), blobs: newFakeBlobs(clock), bus: &fakeBus{}, clock: clock}
	if cfg.StackID == "" {
		cfg.StackID = "stack-test"
	}
	if cfg.Tenant == "" {
		cfg.Tenant = testKey.Tenant
	}
	// The tests' timings assume a two-hour lifetime, which takes a plan
	// allowing more than E2B Base's hour.
	if cfg.MaxSandboxLifetime == 0 {
		cfg.MaxSandboxLifetime = 24 * time.Hour
		if cfg.Lifetime == 0 {
			cfg.Lifetime = 2 * time.Hour
		}
	}
	// Many tests start more sandboxes than E2B Base's 20 on one key, and
	// count the provider calls of the tenant's cap alone; the key's budget
	// is tested on its own.
	if cfg.MaxSandboxesPerKey == 0 {
		cfg.MaxSandboxesPerKey = -1
	}
	// The fake sandboxes run no commands, so they cannot walk a workspace;
	// workspaces are tested on the local runtime (e2e).
	cfg.DisableWorkspaces = true
	m, err := NewManager(cfg, Deps{Store: r.store, Sandboxes: r.sbx, Blobs: r.blobs, Bus: r.bus, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	return r
}

var testKey = Key{Tenant: "acme", Principal: "alice", SessionID: "chat-1"}

// mustStart starts key's sandbox, failing the test if it cannot.
func (r *rig) mustStart(t testing.TB, ctx context.Context, key Key, opts StartOptions) *Session {
	t.Helper()
	s, err := r.m.Start(ctx, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
