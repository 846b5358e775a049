package localaws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// journalFile holds, one JSON line each, the writes since the last
// snapshot, appended before each write is answered; a start replays them
// after the snapshot. So a process killed between two snapshots (SIGKILL,
// an OOM kill) loses no answered write. Lines are not synced to the
// device: the page cache outlives the process, not the machine.
const journalFile = "dynamodb.journal"

// journalEntry is one answered write.
type journalEntry struct {
	Op  string          `json:"op"`
	Req json.RawMessage `json:"req"`
}

// openJournal opens the journal for appending, creating it if need be.
func openJournal(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	return f, nil
}

// appendJournal writes one entry as a single write, so a crash leaves at
// most the last line torn.
func (p *persistentDB) appendJournal(op string, body []byte) error {
	line, err := json.Marshal(journalEntry{Op: op, Req: compactJSON(body)})
	if err != nil {
		return fmt.Errorf("encode journal entry: %w", err)
	}
	p.jmu.Lock()
	defer p.jmu.Unlock()
	if _, err := p.journal.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("append to journal: %w", err)
	}
	return nil
}

// compactJSON keeps a request on one line of the journal.
func compactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b // it succeeded, so it parsed; kept as sent
	}
	return buf.Bytes()
}

// replayJournal applies the journal's writes after the snapshot, in order.
// A torn last line (the process died writing it, so its write was never
// answered) is dropped; a line before it that does not parse is corruption.
func (p *persistentDB) replayJournal(ctx context.Context) (int, error) {
	b, err := os.ReadFile(p.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read journal: %w", err)
	}
	lines := bytes.Split(b, []byte("\n"))
	lines = lines[:len(lines)-1] // after the last newline: empty, or torn
	for i, line := range lines {
		var e journalEntry
		if err := json.Unmarshal(line, &e); err != nil || !mutatingOps[e.Op] {
			return i, fmt.Errorf("journal line %d is not a write", i+1)
		}
		// Every entry was answered as a success on this state, so it
		// applies again; a refusal means the snapshot and the journal
		// disagree.
		if err := p.call(ctx, e.Op, e.Req, nil); err != nil {
			return i, fmt.Errorf("journal line %d: %w", i+1, err)
		}
		p.changed(e.Op, e.Req)
	}
	return len(lines), nil
}

// truncateJournal empties the journal once a snapshot holds its writes.
func (p *persistentDB) truncateJournal() error {
	p.jmu.Lock()
	defer p.jmu.Unlock()
	if err := p.journal.Truncate(0); err != nil {
		return fmt.Errorf("truncate journal: %w", err)
	}
	return nil
}

func (p *persistentDB) journalPath() string { return filepath.Join(filepath.Dir(p.path), journalFile) }
