package localaws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// persistentDB wraps minidyn's handler, noting which tables exist and
// whether anything changed, so the tables can be written to disk and read
// back at the next start. It speaks DynamoDB's own JSON to minidyn, so
// items keep their exact types.
type persistentDB struct {
	h    http.Handler
	path string

	mu sync.Mutex // guards tables and dirty
	// tables holds, per table, the CreateTable request that made it and
	// any UpdateTable requests after it: replayed in order, they rebuild
	// the table (minidyn's DescribeTable leaves out attribute types).
	tables map[string][]json.RawMessage
	dirty  bool

	saving sync.Mutex // one save at a time

	// gate is held shared by each write from its journal entry to its
	// apply, and exclusively by a save from its first read to the
	// journal's truncation, so every answered write is in the snapshot
	// or the journal, never both and never neither.
	gate sync.RWMutex
	// jmu is held by each write from its journal entry to its apply, so
	// the journal's order is the order writes were applied in.
	jmu     sync.Mutex
	journal journalWriter
	// jsize is the journal's length up to its last whole entry of a write
	// that applied; jtorn says the file may hold more (a short append, a
	// refused write whose entry could not be cut off), to cut before the
	// next append.
	jsize int64
	jtorn bool
}

const (
	snapshotFile = "dynamodb.json"
	targetPrefix = "DynamoDB_20120810."
	// maxRequestBytes is above DynamoDB's largest request (a 16 MB batch).
	maxRequestBytes = 32 << 20
)

var mutatingOps = map[string]bool{
	"CreateTable": true, "UpdateTable": true, "DeleteTable": true,
	"PutItem": true, "UpdateItem": true, "DeleteItem": true,
	"BatchWriteItem": true, "TransactWriteItems": true,
}

func openPersistent(ctx context.Context, h http.Handler, dir string) (*persistentDB, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("localaws: dynamodb data dir: %w", err)
	}
	p := &persistentDB{h: h, path: filepath.Join(dir, snapshotFile), tables: map[string][]json.RawMessage{}}
	if err := p.load(ctx); err != nil {
		return nil, fmt.Errorf("localaws: load %s: %w", p.path, err)
	}
	replayed, err := p.replayJournal(ctx)
	if err != nil {
		return nil, fmt.Errorf("localaws: replay %s: %w", p.journalPath(), err)
	}
	if p.journal, err = openJournal(p.journalPath()); err != nil {
		return nil, fmt.Errorf("localaws: %w", err)
	}
	p.makeReserve()
	if st, err := p.journal.Stat(); err != nil || st.Size() > 0 || replayed > 0 {
		// A snapshot now holds the replayed writes and empties the
		// journal, a torn last line with it, before anything is appended.
		p.dirty = true
		if err := p.saveIfDirty(ctx); err != nil {
			return nil, fmt.Errorf("localaws: save after replaying the journal: %w", err)
		}
	}
	return p, nil
}

func (p *persistentDB) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	if !mutatingOps[op] {
		p.h.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes))
	if err != nil {
		http.Error(w, "reading request: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.gate.RLock()
	defer p.gate.RUnlock()
	p.jmu.Lock()
	defer p.jmu.Unlock()
	// The write is applied only once its journal entry is written: a write
	// that could not be saved changed nothing, so the SDK's retry of the
	// 500 below is a true retry, not a conflict with itself.
	next, err := p.appendJournalLocked(op, body)
	if err != nil {
		writeDynamoError(w, "InternalServerError", "the write was not saved, and not applied: "+err.Error())
		return
	}
	rw := &memoryResponse{header: http.Header{}, status: http.StatusOK}
	p.h.ServeHTTP(rw, r)
	if rw.status < 300 {
		p.changed(op, body)
		p.jsize = next
	} else {
		// Refused (a condition, a validation): its entry must not replay.
		p.dropLastEntryLocked()
	}
	for k, v := range rw.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rw.status)
	_, _ = w.Write(rw.body.Bytes())
}

// writeDynamoError answers as DynamoDB does for an error of kind.
func writeDynamoError(w http.ResponseWriter, kind, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusInternalServerError)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + kind, "message": msg})
}

// changed records a successful write.
func (p *persistentDB) changed(op string, body []byte) {
	var req struct{ TableName string }
	if strings.HasSuffix(op, "Table") {
		_ = json.Unmarshal(body, &req) // it succeeded, so it parsed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dirty = true
	switch op {
	case "CreateTable":
		p.tables[req.TableName] = []json.RawMessage{body}
	case "UpdateTable":
		p.tables[req.TableName] = append(p.tables[req.TableName], body)
	case "DeleteTable":
		delete(p.tables, req.TableName)
	}
}

// call sends one DynamoDB request straight to the handler, in process.
func (p *persistentDB) call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localaws/", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("X-Amz-Target", targetPrefix+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rw := &memoryResponse{header: http.Header{}, status: http.StatusOK}
	p.h.ServeHTTP(rw, req)
	if rw.status != http.StatusOK {
		return fmt.Errorf("%s: status %d: %s", op, rw.status, bytes.TrimSpace(rw.body.Bytes()))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(rw.body.Bytes(), out); err != nil {
		return fmt.Errorf("%s: decode answer: %w", op, err)
	}
	return nil
}

type memoryResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (m *memoryResponse) Header() http.Header         { return m.header }
func (m *memoryResponse) Write(b []byte) (int, error) { return m.body.Write(b) }
func (m *memoryResponse) WriteHeader(code int)        { m.status = code }

// snapshot is the file format: each table's defining requests and items,
// all in DynamoDB's JSON.
type snapshot struct {
	Tables []tableSnapshot `json:"tables"`
}

type tableSnapshot struct {
	Name string `json:"name"`
	// Requests are the CreateTable request, then any UpdateTable ones.
	Requests []json.RawMessage `json:"requests"`
	Items    []json.RawMessage `json:"items"`
}

func (p *persistentDB) load(ctx context.Context) error {
	b, err := os.ReadFile(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	for _, t := range snap.Tables {
		if err := p.restore(ctx, t); err != nil {
			return fmt.Errorf("table %s: %w", t.Name, err)
		}
	}
	return nil
}

func (p *persistentDB) restore(ctx context.Context, t tableSnapshot) error {
	for i, req := range t.Requests {
		op := "UpdateTable"
		if i == 0 {
			op = "CreateTable"
		}
		if err := p.call(ctx, op, req, nil); err != nil {
			return err
		}
	}
	for _, item := range t.Items {
		in := map[string]any{"TableName": t.Name, "Item": item}
		if err := p.call(ctx, "PutItem", in, nil); err != nil {
			return err
		}
	}
	p.tables[t.Name] = t.Requests
	return nil
}

// saveIfDirty writes every table to disk if anything changed since the
// last save. The file is replaced atomically, so a crash mid-save leaves
// the previous one.
func (p *persistentDB) saveIfDirty(ctx context.Context) error {
	p.saving.Lock()
	defer p.saving.Unlock()
	p.gate.Lock()
	defer p.gate.Unlock()
	p.mu.Lock()
	dirty, tables := p.dirty, make([]tableSnapshot, 0, len(p.tables))
	for name, reqs := range p.tables {
		tables = append(tables, tableSnapshot{Name: name, Requests: slices.Clone(reqs)})
	}
	p.dirty = false
	p.mu.Unlock()
	if !dirty {
		return nil
	}
	slices.SortFunc(tables, func(a, b tableSnapshot) int { return strings.Compare(a.Name, b.Name) })
	if err := p.save(ctx, tables); err != nil {
		p.mu.Lock()
		p.dirty = true
		p.mu.Unlock()
		return err
	}
	if err := p.truncateJournal(); err != nil {
		return err
	}
	p.makeReserve() // after a full disk, once there is room again
	return nil
}

func (p *persistentDB) save(ctx context.Context, tables []tableSnapshot) error {
	snap := snapshot{Tables: tables}
	for i := range snap.Tables {
		if err := p.dump(ctx, &snap.Tables[i]); err != nil {
			return fmt.Errorf("table %s: %w", snap.Tables[i].Name, err)
		}
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	tmp := p.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	if err := os.Rename(tmp, p.path); err != nil {
		return fmt.Errorf("replace snapshot: %w", err)
	}
	return nil
}

// dump reads every item of t.
func (p *persistentDB) dump(ctx context.Context, t *tableSnapshot) error {
	var start json.RawMessage
	for {
		in := map[string]any{"TableName": t.Name}
		if len(start) > 0 {
			in["ExclusiveStartKey"] = start
		}
		var page struct {
			Items            []json.RawMessage
			LastEvaluatedKey json.RawMessage
		}
		if err := p.call(ctx, "Scan", in, &page); err != nil {
			return err
		}
		t.Items = append(t.Items, page.Items...)
		if lek := string(page.LastEvaluatedKey); lek == "" || lek == "null" || lek == "{}" {
			return nil
		}
		start = page.LastEvaluatedKey
	}
}
