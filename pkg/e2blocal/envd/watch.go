//go:build linux

package envd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"connectrpc.com/connect"
	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// watchOptions are the fields shared by WatchDir and CreateWatcher.
type watchOptions struct {
	path               string
	recursive          bool
	includeEntry       bool
	allowNetworkMounts bool
}

// dirWatch is one inotify watch on a directory (and, when recursive, on
// every directory below it, including ones created later).
type dirWatch struct {
	s    *Server
	root string
	opts watchOptions
	w    *fsnotify.Watcher
	// uploads holds, per directory, whether the upload whose hidden file
	// was just renamed away (IN_MOVED_FROM) replaces a file; the create
	// that follows in that directory (IN_MOVED_TO: the kernel queues the
	// two together under the directory's lock) is that upload landing.
	uploads map[string]bool
}

func (s *Server) openWatch(ctx context.Context, opts watchOptions) (*dirWatch, error) {
	root, err := s.resolvePath(ctx, opts.path)
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	info, err := os.Stat(root)
	if err != nil {
		return nil, fsError(fmt.Errorf("watch %s: %w", root, err))
	}
	if !info.IsDir() {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path %s is not a directory", root))
	}
	if !opts.allowNetworkMounts && onNetworkMount(root) {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("cannot watch path on network filesystem: %s", root))
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("create watcher: %w", err))
	}
	d := &dirWatch{s: s, root: root, opts: opts, w: w, uploads: map[string]bool{}}
	if err := d.add(root); err != nil {
		_ = w.Close()
		return nil, fsError(fmt.Errorf("watch %s: %w", root, err))
	}
	return d, nil
}

// onNetworkMount reports NFS, CIFS/SMB and FUSE mounts, where inotify
// misses remote changes.
func onNetworkMount(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.NFS_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC, unix.SMB_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC, unix.FUSE_SUPER_MAGIC:
		return true
	}
	return false
}

// add watches dir and, when recursive, its subdirectories.
func (d *dirWatch) add(dir string) error {
	if !d.opts.recursive {
		return d.w.Add(dir)
	}
	return filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil
		}
		if !e.IsDir() {
			return nil
		}
		if err := d.w.Add(p); err != nil && p == dir {
			return err
		}
		return nil
	})
}

func (d *dirWatch) close() { _ = d.w.Close() }

// translate turns one inotify event into protocol events (one per
// operation), names relative to the watched root.
func (d *dirWatch) translate(e fsnotify.Event) []*filesystem.FilesystemEvent {
	if d.opts.recursive && e.Has(fsnotify.Create) {
		if info, err := os.Lstat(e.Name); err == nil && info.IsDir() {
			_ = d.add(e.Name)
		}
	}
	name, err := filepath.Rel(d.root, e.Name)
	if err != nil {
		return nil
	}
	dir, base := filepath.Split(e.Name)
	if isUploadTemp(base) {
		if e.Has(fsnotify.Rename) {
			d.uploads[dir] = uploadTempReplaces(base)
		}
		return nil
	}
	if replaced, ok := d.uploads[dir]; ok && e.Has(fsnotify.Create) {
		delete(d.uploads, dir)
		return d.events(e.Name, name, uploadEvents(replaced))
	}
	var types []filesystem.EventType
	for _, m := range opTypes {
		if e.Has(m.op) {
			types = append(types, m.t)
		}
	}
	return d.events(e.Name, name, types)
}

var opTypes = []struct {
	op fsnotify.Op
	t  filesystem.EventType
}{
	{fsnotify.Create, filesystem.EventType_EVENT_TYPE_CREATE},
	{fsnotify.Rename, filesystem.EventType_EVENT_TYPE_RENAME},
	{fsnotify.Chmod, filesystem.EventType_EVENT_TYPE_CHMOD},
	{fsnotify.Write, filesystem.EventType_EVENT_TYPE_WRITE},
	{fsnotify.Remove, filesystem.EventType_EVENT_TYPE_REMOVE},
}

// uploadEvents are what E2B's envd reports for an upload, which opens the
// file (creating it if new), chowns it to the user and writes it in
// place: create, chmod, write for a new file; chmod, write for a replaced
// one. Ours lands by rename, whose kernel events (the hidden file moved
// away, the target created) would say neither.
func uploadEvents(replaced bool) []filesystem.EventType {
	if replaced {
		return []filesystem.EventType{filesystem.EventType_EVENT_TYPE_CHMOD, filesystem.EventType_EVENT_TYPE_WRITE}
	}
	return []filesystem.EventType{filesystem.EventType_EVENT_TYPE_CREATE, filesystem.EventType_EVENT_TYPE_CHMOD, filesystem.EventType_EVENT_TYPE_WRITE}
}

// events builds one protocol event per type for the file at path, shown
// as name.
func (d *dirWatch) events(path, name string, types []filesystem.EventType) []*filesystem.FilesystemEvent {
	var entry *filesystem.EntryInfo
	if d.opts.includeEntry && len(types) > 0 {
		if e, err := d.s.entryInfo(path, path); err == nil {
			entry = e
		}
	}
	out := make([]*filesystem.FilesystemEvent, 0, len(types))
	for _, t := range types {
		out = append(out, &filesystem.FilesystemEvent{Name: name, Type: t, Entry: entry})
	}
	return out
}

var errWatchClosed = errors.New("watcher closed")
