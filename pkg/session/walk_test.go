package session

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// floodListing streams n well-formed walk entries whose paths are pad
// bytes long or more, counting what was read.
type floodListing struct {
	n, i, pad int
	read      int64
	buf       []byte
}

func (f *floodListing) Read(p []byte) (int, error) {
	for len(f.buf) < len(p) && f.i < f.n {
		f.buf = fmt.Appendf(f.buf, `{"path": "d/%s%07d", "mode": 420, "mtimeNs": 1, "type": "f", "size": 1, "sha256": "%064x"}`+"\n",
			strings.Repeat("x", f.pad), f.i, f.i)
		f.i++
	}
	if len(f.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	f.read += int64(n)
	return n, nil
}

// TestReadListingFlood: a walker hijacked to print 3 million entries gets
// a 429 naming the cap it passed, and the parser stops reading at its
// byte bound instead of taking the whole flood into memory.
func TestReadListingFlood(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		maxEntries int
		pad        int
		want       string
	}{
		{"entries cap", 100_000, 0, "MaxWorkspaceEntries"},
		{"bytes cap", 10_000, 4000, "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := &Manager{cfg: Config{MaxWorkspaceEntries: c.maxEntries, MaxWorkspaceBytes: 1 << 40}}
			flood := &floodListing{n: 3_000_000, pad: c.pad}
			entries, err := m.readListing(flood)
			checkLimit(t, entries, err, c.want)
			if bound := m.maxListingBytes() + 64<<10; flood.read > bound {
				t.Errorf("read %d bytes of the flood, want at most %d", flood.read, bound)
			}
		})
	}
}

func checkLimit(t *testing.T, entries []manifestEntry, err error, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrLimit || !strings.Contains(e.Detail, want) {
		t.Fatalf("readListing = %d entries, %v; want ErrLimit naming %q", len(entries), err, want)
	}
}

// TestReadListingChecksEntries: only what walkScript writes is accepted:
// paths below the workspace, known types, real hashes; the sandbox cannot
// claim an object was stored, and a file total past MaxWorkspaceBytes is
// the size cap whatever the walker said.
func TestReadListingChecksEntries(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	good := `{"path": "a/b.txt", "mode": 420, "mtimeNs": 1, "type": "f", "size": 3, "sha256": "` + sum + `", "stored": 99}`
	cases := []struct {
		name, listing string
		kind          error
	}{
		{"good", good + "\n" + `{"path": "a", "mode": 493, "mtimeNs": 1, "type": "d"}` + "\n" + `{"path": "l", "mode": 511, "mtimeNs": 1, "type": "l", "target": "/etc/passwd"}`, nil},
		{"no trailing newline", good, nil},
		{"escape", strings.Replace(good, "a/b.txt", "../../etc/cron.d/x", 1), ErrInvalid},
		{"absolute", strings.Replace(good, "a/b.txt", "/etc/x", 1), ErrInvalid},
		{"unclean", strings.Replace(good, "a/b.txt", "a/../../b", 1), ErrInvalid},
		{"bad hash", strings.Replace(good, sum, "../../x", 1), ErrInvalid},
		{"bad type", strings.Replace(good, `"type": "f"`, `"type": "p"`, 1), ErrInvalid},
		{"negative size", strings.Replace(good, `"size": 3`, `"size": -3`, 1), ErrInvalid},
		{"not json", "{", ErrInvalid},
		{"long line", `{"path": "` + strings.Repeat("x", maxListingLine) + `"}`, ErrInvalid},
		{"over size cap", strings.Replace(good, `"size": 3`, `"size": 2000`, 1), ErrLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := &Manager{cfg: Config{MaxWorkspaceEntries: 1000, MaxWorkspaceBytes: 1000}}
			entries, err := m.readListing(strings.NewReader(c.listing))
			if c.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				if entries[0].Stored != 0 {
					t.Errorf("the sandbox's claim stored=%d was kept", entries[0].Stored)
				}
				return
			}
			if !errors.Is(err, c.kind) {
				t.Fatalf("readListing = %v, want %v", err, c.kind)
			}
		})
	}
}
