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
	"syscall"
)

// journalFile holds, one JSON line each, the writes since the last
// snapshot, appended before each write is applied and answered (a write
// whose entry could not be written is not applied); a start replays them
// after the snapshot. So a process killed between two snapshots (SIGKILL,
// an OOM kill) loses no answered write. Lines are not synced to the
// device: the page cache outlives the process, not the machine.
const journalFile = "dynamodb.journal"

// journalEntry is one answered write.
type journalEntry struct {
	Op  string          `json:"op"`
	Req json.RawMessage `json:"req"`
}

// journalWriter is the journal file; tests put a failing one in its place.
type journalWriter interface {
	Write(b []byte) (int, error)
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
}

// openJournal opens the journal for appending, creating it if need be.
func openJournal(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	return f, nil
}

// appendJournalLocked writes one entry as a single write, so a crash
// leaves at most the last line torn, and returns the journal's length
// with it. A failed append (a full disk: a short write) is cut off again,
// so the next entry starts on a line of its own. The caller holds jmu.
func (p *persistentDB) appendJournalLocked(op string, body []byte) (int64, error) {
	line, err := json.Marshal(journalEntry{Op: op, Req: compactJSON(body)})
	if err != nil {
		return 0, fmt.Errorf("encode journal entry: %w", err)
	}
	if p.jtorn {
		if err := p.journal.Truncate(p.jsize); err != nil {
			return 0, fmt.Errorf("cut the journal back to its last entry: %w", err)
		}
		p.jtorn = false
	}
	line = append(line, '\n')
	n, err := p.journal.Write(line)
	if errors.Is(err, syscall.ENOSPC) && p.releaseReserve() {
		p.dropLastEntryLocked()
		if !p.jtorn {
			n, err = p.journal.Write(line)
		}
	}
	if err != nil {
		p.dropLastEntryLocked()
		return 0, fmt.Errorf("append to journal: %w", err)
	}
	return p.jsize + int64(n), nil
}

// reserveFile holds space set aside for the journal: when the disk is
// full (a sandbox filled it, another process did), deleting it lets the
// writes that free space go through: a stop or a delete that records its
// state and then removes a sandbox's home. It is made again once a
// snapshot succeeds and there is room.
const (
	reserveFile  = "dynamodb.reserve"
	reserveBytes = 4 << 20
)

func (p *persistentDB) reservePath() string { return filepath.Join(filepath.Dir(p.path), reserveFile) }

// makeReserve allocates the reserve if it is missing; a failure (no room,
// a file system without fallocate) leaves none.
func (p *persistentDB) makeReserve() {
	path := p.reservePath()
	if fi, err := os.Stat(path); err == nil && fi.Size() == reserveBytes {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	err = allocate(f, reserveBytes)
	_ = f.Close()
	if err != nil {
		_ = os.Remove(path)
	}
}

// releaseReserve deletes the reserve, reporting whether there was one.
func (p *persistentDB) releaseReserve() bool {
	return os.Remove(p.reservePath()) == nil
}

// dropLastEntryLocked cuts the journal back to jsize, after an entry whose
// write did not apply. If that fails too, the next append tries again
// first (and is refused if it cannot), so such an entry can only be the
// journal's last, which the replay drops if it is refused again.
func (p *persistentDB) dropLastEntryLocked() {
	if err := p.journal.Truncate(p.jsize); err != nil {
		p.jtorn = true
		return
	}
	p.jtorn = false
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
			if i == len(lines)-1 {
				// Only the last entry can be one that was refused and
				// could not be cut off (see dropLastEntryLocked): it
				// was never answered as a success.
				return i, nil
			}
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
		p.jsize, p.jtorn = 0, true // the next append tries again
		return fmt.Errorf("truncate journal: %w", err)
	}
	p.jsize, p.jtorn = 0, false
	return nil
}

func (p *persistentDB) journalPath() string { return filepath.Join(filepath.Dir(p.path), journalFile) }
