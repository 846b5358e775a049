package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// helperPath is the PATH the service's helpers find python3 on: the
// system's directories only, none the user can write to in a local
// sandbox.
const helperPath = "PATH=/usr/local/bin:/usr/bin:/bin"

// helperOutput bounds what a helper's stdout and stderr may hold in memory:
// they print a count or an error at most.
const helperOutput = 64 << 10

// helperArgv runs script with an isolated Python: env -i drops the
// environment (PYTHONPATH, PYTHONSTARTUP and the like), -I ignores the
// user's site dir and PYTHON* variables, -S imports no site module (no
// sitecustomize, usercustomize or .pth files), so nothing the user put in
// the sandbox runs in the helper's place.
func helperArgv(script string, args ...string) []string {
	return append([]string{"/usr/bin/env", "-i", helperPath, "LC_ALL=C.UTF-8", "python3", "-I", "-S", "-c", script}, args...)
}

// runHelper runs one of the service's Python helpers in sandbox id: with
// no shell when the provider can (ProgramRunner), else through RunCommand
// with the same isolated argv; bash -l then still reads the user's login
// files first, which providers with ProgramRunner avoid.
func (m *Manager) runHelper(ctx context.Context, id, script string, args ...string) (ShellOutcome, error) {
	argv := helperArgv(script, args...)
	if p, ok := m.sandboxes.(ProgramRunner); ok {
		return p.RunProgram(ctx, id, argv, workspaceCommandTimeout, helperOutput)
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	return m.sandboxes.RunCommand(ctx, id, "exec "+strings.Join(quoted, " "), workspaceCommandTimeout, nil)
}

// Bounds of a workspace listing, whatever the sandbox writes: a line is one
// entry (a path and a symlink target of at most 4 KiB each, JSON-escaped);
// the listing holds at most MaxWorkspaceEntries of them and
// listingBytesPerEntry bytes per entry allowed, so what a listing keeps in
// memory is bounded by the entries cap.
const (
	maxListingLine       = 64 << 10
	maxEntryPath         = 4096
	listingBytesPerEntry = 512
)

// maxListingBytes is the most a listing may hold.
func (m *Manager) maxListingBytes() int64 {
	return int64(m.cfg.MaxWorkspaceEntries) * listingBytesPerEntry
}

func (m *Manager) tooManyBytes() error {
	return &Error{Kind: ErrLimit, Detail: fmt.Sprintf(
		"the workspace (%s, caches excluded) holds more than the %d bytes a checkpoint may keep (MaxWorkspaceBytes); remove files to have it saved",
		WorkspaceHome, m.cfg.MaxWorkspaceBytes)}
}

func (m *Manager) tooManyEntries() error {
	return &Error{Kind: ErrLimit, Detail: fmt.Sprintf(
		"the workspace (%s, caches excluded) holds more than the %d files, directories and links a checkpoint may keep (MaxWorkspaceEntries); remove some to have it saved",
		WorkspaceHome, m.cfg.MaxWorkspaceEntries)}
}

func badListing(format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Detail: "the workspace listing the sandbox wrote is not valid (" +
		fmt.Sprintf(format, args...) + "); the last good checkpoint is kept"}
}

// readListing parses the walk's JSON lines as they stream in, checking
// every entry and holding the listing to the entries, bytes and line caps:
// past a cap it stops reading and says which cap it was.
func (m *Manager) readListing(r io.Reader) ([]manifestEntry, error) {
	maxBytes := m.maxListingBytes()
	lr := &io.LimitedReader{R: r, N: maxBytes + 1}
	br := bufio.NewReaderSize(lr, 64<<10)
	var entries []manifestEntry
	var total int64
	for {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if lr.N <= 0 {
			return nil, &Error{Kind: ErrLimit, Detail: fmt.Sprintf(
				"the workspace listing is larger than %d bytes (%d per entry allowed by MaxWorkspaceEntries); remove files to have it saved",
				maxBytes, listingBytesPerEntry)}
		}
		if len(entries) == m.cfg.MaxWorkspaceEntries {
			return nil, m.tooManyEntries()
		}
		var e manifestEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, badListing("entry %d is not JSON", len(entries)+1)
		}
		if err := checkEntry(&e); err != nil {
			return nil, badListing("entry %d: %v", len(entries)+1, err)
		}
		if total += e.Size; total > m.cfg.MaxWorkspaceBytes {
			return nil, m.tooManyBytes()
		}
		entries = append(entries, e)
	}
	if lr.N <= 0 {
		return nil, &Error{Kind: ErrLimit, Detail: fmt.Sprintf("the workspace listing is larger than %d bytes", maxBytes)}
	}
	return entries, nil
}

// readLine returns the next line without its newline, refusing one longer
// than maxListingLine without reading it whole.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > maxListingLine {
			return nil, badListing("a line is longer than %d bytes", maxListingLine)
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(buf, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return buf, nil
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		default:
			return nil, fmt.Errorf("read the workspace listing: %w", err)
		}
	}
}

// checkEntry holds an entry to what walkScript writes: a clean path below
// WorkspaceHome, a known type, a file's hash and size, a link's target.
func checkEntry(e *manifestEntry) error {
	p := e.Path
	switch {
	case p == "" || len(p) > maxEntryPath || strings.ContainsRune(p, 0):
		return errors.New("bad path")
	case path.IsAbs(p) || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("path %q is not below %s", truncate(p, 80), WorkspaceHome)
	case e.Mode > 0o7777 || e.Size < 0:
		return errors.New("bad mode or size")
	}
	switch e.Type {
	case "f":
		if !isSHA256(e.SHA256) || e.Target != "" {
			return fmt.Errorf("file %q: bad hash", truncate(p, 80))
		}
	case "d":
		if e.Size != 0 || e.SHA256 != "" || e.Target != "" {
			return fmt.Errorf("directory %q: unexpected fields", truncate(p, 80))
		}
	case "l":
		if e.Target == "" || len(e.Target) > maxEntryPath || strings.ContainsRune(e.Target, 0) || e.Size != 0 || e.SHA256 != "" {
			return fmt.Errorf("link %q: bad target", truncate(p, 80))
		}
	default:
		return fmt.Errorf("unknown type %q", truncate(e.Type, 8))
	}
	e.Stored = 0 // the service sets it, never the sandbox
	return nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
