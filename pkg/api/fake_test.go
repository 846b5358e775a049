package api

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// fakeManager answers every call with plausible data, or with err when set;
// hooks replace single methods. It records the keys it was called with so
// tests can check identity and validation reach the Manager as intended.
type fakeManager struct {
	mu      sync.Mutex
	calls   []string
	keys    []session.Key
	err     error // returned by every method but Authenticate
	authErr error
	keys2   map[string]*session.APIKey

	execute func(ctx context.Context, key session.Key, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error)
	install func(ctx context.Context, key session.Key, req session.InstallRequest, onEvent func(session.Event)) (*session.InstallResult, error)
	write   func(ctx context.Context, key session.Key, path string, r io.Reader) (session.FileEntry, error)
	read    func(ctx context.Context, key session.Key, path string) (io.ReadCloser, session.FileEntry, error)
	list    func(ctx context.Context, tenant, principal string, limit int, cursor string) ([]*session.Session, string, error)
	submit  func(ctx context.Context, key session.Key, req session.RunRequest) (*session.Run, error)
	start   func(ctx context.Context, key session.Key, opts session.StartOptions) (*session.Session, error)
}

var fakeNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Test API keys: each its own principal in one tenant.
const (
	keyAlice = "sbx_alice_0123456789"
	keyBob   = "sbx_bob_0123456789"
)

func newFake() *fakeManager {
	return &fakeManager{keys2: map[string]*session.APIKey{
		keyAlice: {Hash: session.HashAPIKey(keyAlice), Tenant: "t1", Principal: "alice"},
		keyBob:   {Hash: session.HashAPIKey(keyBob), Tenant: "t1", Principal: "bob"},
	}}
}

func (f *fakeManager) record(name string, key session.Key) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	f.keys = append(f.keys, key)
	return f.err
}

func (f *fakeManager) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeManager) lastKey() session.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.keys) == 0 {
		return session.Key{}
	}
	return f.keys[len(f.keys)-1]
}

func fakeSession(key session.Key) *session.Session {
	return &session.Session{Key: key, State: session.StateRunning, SandboxID: "sbx_1", Type: session.TypeCodeInterpreter,
		Template: "code-interpreter-v1", Metadata: map[string]string{"chat": "42"}, CreatedAt: fakeNow, LastActivityAt: fakeNow,
		IdleDeadline: fakeNow.Add(30 * time.Minute), LifetimeDeadline: fakeNow.Add(2 * time.Hour)}
}

func fakeResult() *session.ExecResult {
	return &session.ExecResult{Success: true, Stdout: "hi\n", Results: []session.Result{{Text: "2", IsMainResult: true}},
		ExecutionCount: 1, DurationMs: 3, Artifacts: []session.Artifact{{Path: "/home/user/a.png", SizeBytes: 10, MimeType: "image/png", DownloadURL: "http://x/a"}}}
}

func fakeEntry(p string) session.FileEntry {
	return session.FileEntry{Name: p[strings.LastIndex(p, "/")+1:], Path: p, Type: "file", Size: 5, ModifiedAt: fakeNow}
}

func (f *fakeManager) Authenticate(ctx context.Context, plaintext string) (*session.APIKey, error) {
	f.mu.Lock()
	err := f.authErr
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// Like the Manager: revoked keys are refused at the lookup.
	if k, ok := f.keys2[plaintext]; ok && !k.Revoked() {
		return k, nil
	}
	return nil, session.Errorf(session.ErrUnauthorized, "unknown key")
}

func (f *fakeManager) Start(ctx context.Context, key session.Key, opts session.StartOptions) (*session.Session, error) {
	if err := f.record("Start", key); err != nil {
		return nil, err
	}
	if f.start != nil {
		return f.start(ctx, key, opts)
	}
	return fakeSession(key), nil
}

func (f *fakeManager) Stop(ctx context.Context, key session.Key) (*session.Session, error) {
	if err := f.record("Stop", key); err != nil {
		return nil, err
	}
	s := fakeSession(key)
	s.State, s.SandboxID, s.IdleDeadline, s.LifetimeDeadline = session.StateStopped, "", time.Time{}, time.Time{}
	return s, nil
}

func (f *fakeManager) Status(ctx context.Context, key session.Key) (*session.Session, error) {
	if err := f.record("Status", key); err != nil {
		return nil, err
	}
	return fakeSession(key), nil
}

func (f *fakeManager) Checkpoint(ctx context.Context, key session.Key) (session.CheckpointInfo, error) {
	if err := f.record("Checkpoint", key); err != nil {
		return session.CheckpointInfo{}, err
	}
	return session.CheckpointInfo{At: fakeNow, Files: 3, Bytes: 1234}, nil
}

func (f *fakeManager) Delete(ctx context.Context, key session.Key) error {
	return f.record("Delete", key)
}

func (f *fakeManager) List(ctx context.Context, tenant, principal string, limit int, cursor string) ([]*session.Session, string, error) {
	if err := f.record("List", session.Key{Tenant: tenant, Principal: principal}); err != nil {
		return nil, "", err
	}
	if f.list != nil {
		return f.list(ctx, tenant, principal, limit, cursor)
	}
	return []*session.Session{fakeSession(session.Key{Tenant: tenant, Principal: principal, SessionID: "s1"})}, "next-1", nil
}

func (f *fakeManager) Execute(ctx context.Context, key session.Key, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	if err := f.record("Execute", key); err != nil {
		return nil, err
	}
	if f.execute != nil {
		return f.execute(ctx, key, req, onEvent)
	}
	return fakeResult(), nil
}

func (f *fakeManager) Reset(ctx context.Context, key session.Key) error {
	return f.record("Reset", key)
}

func (f *fakeManager) Metrics(ctx context.Context, key session.Key) (*session.SandboxMetrics, error) {
	if err := f.record("Metrics", key); err != nil {
		return nil, err
	}
	m := session.SandboxMetric{Timestamp: fakeNow, CPUCount: 2, CPUUsedPct: 37.5, MemUsedBytes: 268435456,
		MemTotalBytes: 1073741824, DiskUsedBytes: 1048576, DiskTotalBytes: 10737418240}
	return &session.SandboxMetrics{SandboxMetric: m, Samples: []session.SandboxMetric{m}}, nil
}

func (f *fakeManager) CreateContext(ctx context.Context, key session.Key, req session.ContextRequest) (*session.CodeContext, error) {
	if err := f.record("CreateContext", key); err != nil {
		return nil, err
	}
	return &fakeContext, nil
}

func (f *fakeManager) ListContexts(ctx context.Context, key session.Key) ([]session.CodeContext, error) {
	if err := f.record("ListContexts", key); err != nil {
		return nil, err
	}
	return []session.CodeContext{fakeContext}, nil
}

func (f *fakeManager) DeleteContext(ctx context.Context, key session.Key, id string) error {
	return f.record("DeleteContext", key)
}

func (f *fakeManager) ResetContext(ctx context.Context, key session.Key, id string) error {
	return f.record("ResetContext", key)
}

var fakeContext = session.CodeContext{ID: "ctx-1", Language: "python", Cwd: "/home/user/work", SandboxID: "sbx_1", CreatedAt: fakeNow}

func (f *fakeManager) Install(ctx context.Context, key session.Key, req session.InstallRequest, onEvent func(session.Event)) (*session.InstallResult, error) {
	if err := f.record("Install", key); err != nil {
		return nil, err
	}
	if f.install != nil {
		return f.install(ctx, key, req, onEvent)
	}
	return &session.InstallResult{Success: true, Stdout: "Successfully installed tinylib-1.0\n", DurationMs: 7}, nil
}

func (f *fakeManager) ListFiles(ctx context.Context, key session.Key, dir string, depth int) ([]session.FileEntry, error) {
	if err := f.record("ListFiles", key); err != nil {
		return nil, err
	}
	return []session.FileEntry{fakeEntry(dir + "/a.txt")}, nil
}

func (f *fakeManager) ReadFile(ctx context.Context, key session.Key, path string) (io.ReadCloser, session.FileEntry, error) {
	if err := f.record("ReadFile", key); err != nil {
		return nil, session.FileEntry{}, err
	}
	if f.read != nil {
		return f.read(ctx, key, path)
	}
	return io.NopCloser(strings.NewReader("hello")), fakeEntry(path), nil
}

func (f *fakeManager) ListSavedFiles(ctx context.Context, key session.Key, dir string, depth int) (*session.SavedListing, error) {
	if err := f.record("ListSavedFiles", key); err != nil {
		return nil, err
	}
	return &session.SavedListing{Entries: []session.FileEntry{fakeEntry(dir + "/a.txt")}}, nil
}

func (f *fakeManager) ReadSavedFile(ctx context.Context, key session.Key, path string) (io.ReadCloser, *session.SavedFile, error) {
	if err := f.record("ReadSavedFile", key); err != nil {
		return nil, nil, err
	}
	return io.NopCloser(strings.NewReader("saved")), &session.SavedFile{Entry: fakeEntry(path)}, nil
}

func (f *fakeManager) WriteFile(ctx context.Context, key session.Key, path string, r io.Reader) (session.FileEntry, error) {
	if err := f.record("WriteFile", key); err != nil {
		return session.FileEntry{}, err
	}
	if f.write != nil {
		return f.write(ctx, key, path, r)
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return session.FileEntry{}, session.Errorf(session.ErrUnavailable, "write failed")
	}
	e := fakeEntry(path)
	e.Size = n
	return e, nil
}

func (f *fakeManager) DeleteFile(ctx context.Context, key session.Key, path string) error {
	return f.record("DeleteFile", key)
}

func (f *fakeManager) UploadURL(ctx context.Context, key session.Key, path string, size int64, contentType string) (*session.UploadTicket, error) {
	if err := f.record("UploadURL", key); err != nil {
		return nil, err
	}
	return &session.UploadTicket{TransferID: "tr_1", Request: session.PresignedRequest{URL: "http://127.0.0.1/s3/x", Method: "PUT",
		Headers: map[string]string{"Content-Type": contentType}, ExpiresAt: fakeNow.Add(15 * time.Minute)}}, nil
}

func (f *fakeManager) Import(ctx context.Context, key session.Key, transferID string) (session.FileEntry, error) {
	if err := f.record("Import", key); err != nil {
		return session.FileEntry{}, err
	}
	return fakeEntry("/home/user/big.bin"), nil
}

func (f *fakeManager) DownloadURL(ctx context.Context, key session.Key, path string) (*session.DownloadTicket, error) {
	if err := f.record("DownloadURL", key); err != nil {
		return nil, err
	}
	return &session.DownloadTicket{URL: "http://127.0.0.1/s3/y", ExpiresAt: fakeNow.Add(15 * time.Minute), SizeBytes: 5}, nil
}

func (f *fakeManager) SubmitRun(ctx context.Context, key session.Key, req session.RunRequest) (*session.Run, error) {
	if err := f.record("SubmitRun", key); err != nil {
		return nil, err
	}
	if f.submit != nil {
		return f.submit(ctx, key, req)
	}
	return &session.Run{ID: "run1", Key: key, Status: session.RunQueued}, nil
}

func (f *fakeManager) GetRun(ctx context.Context, tenant, principal, runID string) (*session.Run, error) {
	if err := f.record("GetRun", session.Key{Tenant: tenant, Principal: principal}); err != nil {
		return nil, err
	}
	run := &session.Run{ID: runID, Key: session.Key{Tenant: tenant, Principal: principal, SessionID: "s1"}, Status: session.RunSucceeded,
		Result: fakeResult(), CreatedAt: fakeNow, StartedAt: fakeNow, FinishedAt: fakeNow.Add(time.Second)}
	if runID == fakeLargeRun {
		run.Result, run.ResultKey = nil, "runs/"+runID+"/result.json"
	}
	return run, nil
}

// fakeLargeRun is the run whose result went to blob storage.
const fakeLargeRun = "run-large"

func (f *fakeManager) RunResultURL(ctx context.Context, tenant, principal, runID string) (*session.DownloadTicket, error) {
	if err := f.record("RunResultURL", session.Key{Tenant: tenant, Principal: principal}); err != nil {
		return nil, err
	}
	if runID != fakeLargeRun {
		return nil, session.Errorf(session.ErrNotFound, "run %s has no stored result", runID)
	}
	return &session.DownloadTicket{URL: "http://127.0.0.1/s3/result", ExpiresAt: fakeNow.Add(15 * time.Minute), SizeBytes: -1}, nil
}

func providerDown() error { return session.Errorf(session.ErrUnavailable, "provider down") }
