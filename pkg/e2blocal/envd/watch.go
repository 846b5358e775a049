//go:build linux

package envd

import (
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
}

func (s *Server) openWatch(opts watchOptions) (*dirWatch, error) {
	root, err := s.resolvePath(opts.path)
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
	d := &dirWatch{s: s, root: root, opts: opts, w: w}
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
	if err != nil || isUploadTemp(filepath.Base(e.Name)) {
		// An upload's hidden file shows as the create of its target
		// when it is renamed into place.
		return nil
	}
	var out []*filesystem.FilesystemEvent
	for _, m := range []struct {
		op fsnotify.Op
		t  filesystem.EventType
	}{
		{fsnotify.Create, filesystem.EventType_EVENT_TYPE_CREATE},
		{fsnotify.Rename, filesystem.EventType_EVENT_TYPE_RENAME},
		{fsnotify.Chmod, filesystem.EventType_EVENT_TYPE_CHMOD},
		{fsnotify.Write, filesystem.EventType_EVENT_TYPE_WRITE},
		{fsnotify.Remove, filesystem.EventType_EVENT_TYPE_REMOVE},
	} {
		if !e.Has(m.op) {
			continue
		}
		ev := &filesystem.FilesystemEvent{Name: name, Type: m.t}
		if d.opts.includeEntry {
			if entry, err := d.s.entryInfo(e.Name, e.Name); err == nil {
				ev.Entry = entry
			}
		}
		out = append(out, ev)
	}
	return out
}

var errWatchClosed = errors.New("watcher closed")
