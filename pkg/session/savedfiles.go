package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// A session without a sandbox (stopped, or its sandbox gone) still has the
// files of its last checkpoint. The saved reads below answer from that
// workspace without starting a sandbox: ListFiles and ReadFile keep saying
// ErrNotFound (IsNoSandbox) and their callers choose to fall back here, so
// nobody mistakes a checkpoint for the live files. The walk leaves out
// caches (.cache, __pycache__), so these reads do too.

// SavedListing is a directory listing as the last checkpoint holds it.
type SavedListing struct {
	Entries      []FileEntry
	CheckpointAt time.Time
}

// SavedFile is one file as the last checkpoint holds it.
type SavedFile struct {
	Entry        FileEntry
	CheckpointAt time.Time
}

// maxSavedLinkHops bounds how many symlinks a saved read follows.
const maxSavedLinkHops = 8

// IsNoSandbox reports whether err is the ErrNotFound of a session that
// exists but has no sandbox, the case where its saved workspace may answer.
func IsNoSandbox(err error) bool { return errors.Is(err, errNoSandbox) }

// ListSavedFiles lists dir (default the working directory) down to depth
// levels (default 1) from the session's last checkpoint, starting nothing.
// ErrNotFound when the session has no checkpoint or dir is not in it.
func (m *Manager) ListSavedFiles(ctx context.Context, key Key, dir string, depth int) (*SavedListing, error) {
	dir, depth, err := listArgs(dir, depth)
	if err != nil {
		return nil, err
	}
	mf, err := m.savedManifest(ctx, key)
	if err != nil {
		return nil, err
	}
	rel, ok := workspaceRel(dir)
	if !ok {
		return nil, notSaved(dir)
	}
	if rel != "" {
		e, found := mf.entry(rel)
		if !found {
			return nil, notSaved(dir)
		}
		if e.Type != "d" {
			return nil, Errorf(ErrInvalid, "%s is not a directory", dir)
		}
	}
	out := &SavedListing{Entries: []FileEntry{}, CheckpointAt: mf.At}
	for _, e := range mf.Entries {
		sub, ok := below(rel, e.Path)
		if ok && strings.Count(sub, "/") < depth {
			out.Entries = append(out.Entries, savedEntry(e))
		}
	}
	return out, nil
}

// ReadSavedFile opens one file of the session's last checkpoint for an
// inline read, following symlinks inside the workspace: ErrTooLarge past the
// inline limit, ErrInvalid for a directory, ErrNotFound for a path the
// checkpoint lacks. The caller closes the reader.
func (m *Manager) ReadSavedFile(ctx context.Context, key Key, p string) (io.ReadCloser, *SavedFile, error) {
	p, err := CleanPath(p)
	if err != nil {
		return nil, nil, err
	}
	mf, err := m.savedManifest(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	e, err := mf.resolve(p)
	if err != nil {
		return nil, nil, err
	}
	if e.Size > m.cfg.MaxInlineFileBytes {
		return nil, nil, &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf(
			"%s is %d bytes, more than the inline limit of %d bytes: start the session and use files/download-url for larger files", p, e.Size, m.cfg.MaxInlineFileBytes)}
	}
	r, _, err := m.blobs.Open(ctx, objectKey(key, e.SHA256))
	if err != nil {
		return nil, nil, fmt.Errorf("open the saved copy of %s: %w", p, err)
	}
	entry := savedEntry(e)
	entry.Path, entry.Name = p, path.Base(p)
	return limitedReadCloser{Reader: io.LimitReader(r, e.Size), Closer: r}, &SavedFile{Entry: entry, CheckpointAt: mf.At}, nil
}

// savedManifest is the manifest of a session that exists and keeps a
// workspace; ErrNotFound (IsNoSandbox) when it has none to answer from.
func (m *Manager) savedManifest(ctx context.Context, key Key) (*manifest, error) {
	s, err := m.Status(ctx, key)
	if err != nil {
		return nil, err
	}
	if !m.persists(s) {
		return nil, noSandbox(key)
	}
	mf, err := m.readManifest(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, &Error{Kind: ErrNotFound, Err: errNoSandbox, Detail: fmt.Sprintf(
			"session %q has no sandbox and no checkpointed workspace; run code or start it first", key.SessionID)}
	} else if err != nil {
		return nil, err
	}
	return mf, nil
}

func notSaved(p string) error {
	return Errorf(ErrNotFound, "%s is not in the session's checkpointed workspace", p)
}

// workspaceRel is p relative to WorkspaceHome ("" for the home itself);
// false when p lies outside it.
func workspaceRel(p string) (string, bool) {
	if p == WorkspaceHome {
		return "", true
	}
	rel, ok := strings.CutPrefix(p, WorkspaceHome+"/")
	return rel, ok
}

// below is p relative to dir when p lies strictly below it.
func below(dir, p string) (string, bool) {
	if dir == "" {
		return p, true
	}
	return strings.CutPrefix(p, dir+"/")
}

func (mf *manifest) entry(rel string) (manifestEntry, bool) {
	for _, e := range mf.Entries {
		if e.Path == rel {
			return e, true
		}
	}
	return manifestEntry{}, false
}

// resolve finds the regular file p names, following symlinks that stay in
// the workspace.
func (mf *manifest) resolve(p string) (manifestEntry, error) {
	orig := p
	for range maxSavedLinkHops {
		rel, ok := workspaceRel(p)
		if !ok || rel == "" {
			return manifestEntry{}, notSaved(orig)
		}
		e, found := mf.entry(rel)
		switch {
		case !found:
			return manifestEntry{}, notSaved(orig)
		case e.Type == "d":
			return manifestEntry{}, Errorf(ErrInvalid, "%s is a directory", orig)
		case e.Type == "f":
			return e, nil
		}
		if path.IsAbs(e.Target) {
			p = path.Clean(e.Target)
		} else {
			p = path.Join(path.Dir(p), e.Target)
		}
	}
	return manifestEntry{}, Errorf(ErrInvalid, "%s: too many levels of symbolic links", orig)
}

func savedEntry(e manifestEntry) FileEntry {
	typ := map[string]string{"f": "file", "d": "dir", "l": "symlink"}[e.Type]
	return FileEntry{Name: path.Base(e.Path), Path: path.Join(WorkspaceHome, e.Path), Type: typ, Size: e.Size,
		ModifiedAt: time.Unix(0, e.MtimeNs).UTC()}
}
