//go:build linux

package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// treeWatch tracks, with inotify, which files below a kernel's working
// directory change during a cell: the directory and the directories right
// below it (the depth the service looks for artifacts at, dot names left
// out, as the kernel's own scan does). With it the kernel need not scan the
// tree before and after every cell (a stat per file, twice); the server
// reads the events after the cell and stats only the files they name. Any
// doubt (a full event queue, the directory itself gone, more files named
// than a report holds) breaks the watch: that cell is scanned, and the
// next one gets a new watch (proc.treeWatch).
type treeWatch struct {
	// mu orders the cell's use with close, which the kernel's reader calls
	// once the kernel is gone.
	mu     sync.Mutex
	fd     int // -1 once closed
	root   string
	dirs   map[int32]string // watch descriptor -> directory ("" is root)
	broken bool
	// candidates are the paths events named during the cell.
	candidates map[string]struct{}
	buf        []byte
	emptyLine  []byte // the line saying nothing changed, once made
}

const (
	// watchDirMask is what a watched directory reports: entries made,
	// written, renamed or removed, and the directory itself going away.
	watchDirMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB |
		unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_DELETE_SELF |
		unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK
	// maxWatchEntries bounds the entries a new watch lists (the directory's
	// and its subdirectories'), and those of a directory appearing in it,
	// as the kernel's scan bounds its own (_SCAN_MAX).
	maxWatchEntries = maxChangedFiles
)

var errWatchBroken = errors.New("tree watch broken")

// newTreeWatch watches dir and its subdirectories.
func newTreeWatch(dir string) (*treeWatch, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &treeWatch{fd: fd, root: root, dirs: map[int32]string{}, candidates: map[string]struct{}{}, buf: make([]byte, 64<<10)}
	if err := w.add(""); err != nil {
		w.close()
		return nil, err
	}
	entries, err := os.ReadDir(root)
	seen := len(entries)
	for _, e := range entries {
		if err != nil || seen > maxWatchEntries {
			break
		}
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			if err = w.add(e.Name()); err == nil {
				var below []os.DirEntry
				below, err = os.ReadDir(filepath.Join(root, e.Name()))
				seen += len(below)
			}
		}
	}
	if err != nil || seen > maxWatchEntries {
		// As the kernel's scan, which gives up on a tree this big.
		w.close()
		return nil, fmt.Errorf("list %s: %d entries: %w", root, seen, errors.Join(err, errWatchBroken))
	}
	return w, nil
}

// add watches the directory rel ("" for root).
func (w *treeWatch) add(rel string) error {
	wd, err := unix.InotifyAddWatch(w.fd, filepath.Join(w.root, rel), watchDirMask)
	if err != nil {
		return fmt.Errorf("watch %s: %w", filepath.Join(w.root, rel), err)
	}
	w.dirs[int32(wd)] = rel
	return nil
}

func (w *treeWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// isBroken says whether the watch has stopped tracking the tree.
func (w *treeWatch) isBroken() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.broken
}

// begin starts a cell: what happened since the last cell keeps the watch
// up to date and is otherwise forgotten.
func (w *treeWatch) begin() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drain()
	clear(w.candidates)
	return !w.broken
}

// appendLine drains the cell's events and appends the files_changed line
// of the files they name, or nothing when the watch cannot say.
func (w *treeWatch) appendLine(b []byte) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drain()
	if len(w.candidates) > maxChangedFiles {
		w.broken = true
	}
	if w.broken {
		return b
	}
	if len(w.candidates) == 0 && w.emptyLine != nil {
		return append(b, w.emptyLine...)
	}
	rep := changedReport{Root: w.root, Files: []changedFile{}}
	for rel := range w.candidates {
		p := filepath.Join(w.root, rel)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		rep.Files = append(rep.Files, changedFile{Path: p, Size: fi.Size(), Modified: fi.ModTime().UTC()})
	}
	line, err := json.Marshal(filesChangedLine{Type: "files_changed", changedReport: rep, Complete: true})
	if err != nil {
		return b
	}
	line = append(line, '\n')
	if len(rep.Files) == 0 {
		w.emptyLine = line
	}
	return append(b, line...)
}

// drain reads every queued event.
func (w *treeWatch) drain() {
	if w.fd < 0 {
		w.broken = true
	}
	for !w.broken {
		n, err := unix.Read(w.fd, w.buf)
		if err != nil || n <= 0 {
			if err != unix.EAGAIN && err != unix.EINTR {
				w.broken = true
			}
			if err != unix.EINTR {
				return
			}
			continue
		}
		w.events(w.buf[:n])
	}
}

func (w *treeWatch) events(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent && !w.broken {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			w.broken = true
			return
		}
		name := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:end], "\x00"))
		w.event(ev.Wd, ev.Mask, name)
		b = b[end:]
	}
}

func (w *treeWatch) event(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.broken = true
		return
	}
	dir, ok := w.dirs[wd]
	if !ok {
		return // a directory already dropped
	}
	if mask&unix.IN_IGNORED != 0 || mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
		if dir == "" {
			w.broken = true // the working directory itself went away
			return
		}
		if mask&unix.IN_IGNORED != 0 {
			delete(w.dirs, wd)
		}
		return
	}
	if name == "" || strings.HasPrefix(name, ".") {
		return
	}
	rel := filepath.Join(dir, name)
	if mask&unix.IN_ISDIR == 0 {
		w.candidates[rel] = struct{}{}
		return
	}
	if dir != "" {
		return // below the depth files are reported at
	}
	if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		w.appeared(rel)
	} else if mask&(unix.IN_MOVED_FROM|unix.IN_DELETE) != 0 {
		for d, r := range w.dirs {
			if r == rel {
				delete(w.dirs, d)
				// Moved out of the tree it would go on reporting.
				_, _ = unix.InotifyRmWatch(w.fd, uint32(d))
			}
		}
	}
}

// appeared watches a directory made or moved into root and takes every
// file already in it as changed, as a scan before and after would see them
// (new paths).
func (w *treeWatch) appeared(rel string) {
	if err := w.add(rel); err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			w.broken = true // gone again is fine; anything else leaves a blind spot
		}
		return
	}
	entries, err := os.ReadDir(filepath.Join(w.root, rel))
	if err != nil || len(entries) > maxWatchEntries {
		w.broken = err == nil || !errors.Is(err, os.ErrNotExist)
		return
	}
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			w.candidates[filepath.Join(rel, e.Name())] = struct{}{}
		}
	}
}
