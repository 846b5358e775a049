package bus

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// journal keeps a Local bus's accepted runs on disk, so a run answered 202
// survives the service being killed: each request is appended and synced
// before PublishRunRequested returns; a worker notes when it takes a run up
// and when it is done. Lines are JSON records; a torn last line (the kill
// came mid-append) is ignored.
type journal struct {
	path string

	mu      sync.Mutex
	f       *os.File
	pending map[string]pendingRun // by run id: accepted, not done
	done    int                   // done records since the file was last rewritten
}

type pendingRun struct {
	Event   session.RunRequested
	Started bool
}

type journalRecord struct {
	Op    string                `json:"op"` // "req", "start" or "done"
	RunID string                `json:"runId,omitempty"`
	Event *session.RunRequested `json:"event,omitempty"`
}

// compactAfter is how many finished runs the journal holds before it is
// rewritten with only the pending ones.
const compactAfter = 1024

// openJournal reads what a previous process left in path and starts a
// fresh file holding only its pending runs.
func openJournal(path string) (*journal, error) {
	j := &journal{path: path, pending: map[string]pendingRun{}}
	if err := j.load(); err != nil {
		return nil, err
	}
	if err := j.rewrite(); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *journal) load() error {
	f, err := os.Open(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("bus journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // a run's code is at most a few MiB
	for sc.Scan() {
		var r journalRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue // a torn append
		}
		j.apply(r)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("bus journal %s: %w", j.path, err)
	}
	return nil
}

func (j *journal) apply(r journalRecord) {
	switch r.Op {
	case "req":
		if r.Event != nil && r.Event.RunID != "" {
			j.pending[r.Event.RunID] = pendingRun{Event: *r.Event}
		}
	case "start":
		if p, ok := j.pending[r.RunID]; ok {
			p.Started = true
			j.pending[r.RunID] = p
		}
	case "done":
		delete(j.pending, r.RunID)
	}
}

// rewrite replaces the file with one holding the pending runs only.
func (j *journal) rewrite() error {
	dir := filepath.Dir(j.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("bus journal: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".runs-journal-*")
	if err != nil {
		return fmt.Errorf("bus journal: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	enc := json.NewEncoder(w)
	for id, p := range j.pending {
		ev := p.Event
		err = errors.Join(err, enc.Encode(journalRecord{Op: "req", Event: &ev}))
		if p.Started {
			err = errors.Join(err, enc.Encode(journalRecord{Op: "start", RunID: id}))
		}
	}
	err = errors.Join(err, w.Flush(), tmp.Sync())
	if err == nil {
		err = os.Rename(tmp.Name(), j.path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		tmp.Close()
		return fmt.Errorf("bus journal: write %s: %w", j.path, err)
	}
	if j.f != nil {
		_ = j.f.Close()
	}
	j.f, j.done = tmp, 0 // tmp's descriptor now names j.path
	return nil
}

// append writes r; sync makes it durable before returning.
func (j *journal) append(r journalRecord, sync bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("bus journal: %w", err)
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("bus journal: %w", err)
	}
	if sync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("bus journal: %w", err)
		}
	}
	j.apply(r)
	if r.Op == "done" {
		if j.done++; j.done >= compactAfter {
			return j.rewrite()
		}
	}
	return nil
}

func (j *journal) accepted(e session.RunRequested) error {
	return j.append(journalRecord{Op: "req", Event: &e}, true)
}

func (j *journal) started(id string) error {
	return j.append(journalRecord{Op: "start", RunID: id}, true)
}

func (j *journal) finished(id string) error {
	return j.append(journalRecord{Op: "done", RunID: id}, false)
}

// takePending returns the runs a previous process accepted and did not
// finish, each once.
func (j *journal) takePending() []pendingRun {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]pendingRun, 0, len(j.pending))
	for _, p := range j.pending {
		out = append(out, p)
	}
	return out
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}

// Interrupted is called, at Resume, for each run a previous process had
// started and not finished when it died: it must not run again (its code
// may have had effects); the callee records why it ended.
type Interrupted func(ctx context.Context, e session.RunRequested) error

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
