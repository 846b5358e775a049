package session

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
)

// maxListDepth bounds a listing's depth.
const maxListDepth = 10

// ListFiles lists dir (default the working directory) down to depth levels
// (default 1). It resumes a paused sandbox but starts none: an unknown
// session is ErrNotFound, and so is one without a sandbox (stopped, or its
// sandbox gone), with a detail saying to run code or start it first.
func (m *Manager) ListFiles(ctx context.Context, key Key, dir string, depth int) ([]FileEntry, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	dir, depth, err := listArgs(dir, depth)
	if err != nil {
		return nil, err
	}
	var out []FileEntry
	err = m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
		es, err := m.sandboxes.ListFiles(ctx, s.SandboxID, dir, depth)
		if err != nil {
			return true, fmt.Errorf("list %s: %w", dir, err)
		}
		out = es
		return false, nil
	})
	return out, err
}

// ReadFile opens one file for an inline read; ErrTooLarge past the inline
// limit, ErrInvalid for a directory. The caller closes the reader. Like
// ListFiles it starts no sandbox: a session without one is ErrNotFound.
func (m *Manager) ReadFile(ctx context.Context, key Key, p string) (io.ReadCloser, FileEntry, error) {
	if err := validateKey(key); err != nil {
		return nil, FileEntry{}, err
	}
	p, err := CleanPath(p)
	if err != nil {
		return nil, FileEntry{}, err
	}
	var (
		rc    io.ReadCloser
		entry FileEntry
	)
	err = m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
		e, err := m.statFile(ctx, s.SandboxID, p)
		if err != nil {
			return true, err
		}
		if e.Size > m.cfg.MaxInlineFileBytes {
			return false, &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf(
				"%s is %d bytes, more than the inline limit of %d bytes: use files/download-url for larger files", p, e.Size, m.cfg.MaxInlineFileBytes)}
		}
		r, err := m.sandboxes.ReadFile(ctx, s.SandboxID, p)
		if err != nil {
			return true, fmt.Errorf("read %s: %w", p, err)
		}
		rc, entry = r, e
		return false, nil
	})
	if err != nil {
		return nil, FileEntry{}, err
	}
	// The file may have grown since the stat: hold the read to the limit.
	return limitedReadCloser{Reader: io.LimitReader(rc, m.cfg.MaxInlineFileBytes), Closer: rc}, entry, nil
}

type limitedReadCloser struct {
	io.Reader
	io.Closer
}

// statFile stats a regular file: ErrInvalid for a directory.
func (m *Manager) statFile(ctx context.Context, id, p string) (FileEntry, error) {
	e, err := m.sandboxes.StatFile(ctx, id, p)
	if err != nil {
		return FileEntry{}, fmt.Errorf("stat %s: %w", p, err)
	}
	if e.Type == "dir" {
		return FileEntry{}, Errorf(ErrInvalid, "%s is a directory", p)
	}
	return e, nil
}

// WriteFile writes r to a file, creating parent directories; ErrTooLarge
// past the inline limit. The content is buffered (it is small), so a write
// that finds the sandbox gone is simply made again on a fresh one.
func (m *Manager) WriteFile(ctx context.Context, key Key, p string, r io.Reader) (FileEntry, error) {
	if err := validateKey(key); err != nil {
		return FileEntry{}, err
	}
	p, err := CleanPath(p)
	if err != nil {
		return FileEntry{}, err
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(r, m.cfg.MaxInlineFileBytes+1)); err != nil {
		return FileEntry{}, fmt.Errorf("read content for %s: %w", p, err)
	}
	if int64(buf.Len()) > m.cfg.MaxInlineFileBytes {
		return FileEntry{}, &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf(
			"content is more than the inline limit of %d bytes: use files/upload-url and files/import for larger files", m.cfg.MaxInlineFileBytes)}
	}
	var entry FileEntry
	_, err = m.withSandbox(ctx, key, nil, func(ctx context.Context, s *Session) (bool, error) {
		if err := m.sandboxes.WriteFile(ctx, s.SandboxID, p, bytes.NewReader(buf.Bytes())); err != nil {
			return true, fmt.Errorf("write %s: %w", p, err)
		}
		entry = FileEntry{Name: path.Base(p), Path: p, Type: "file", Size: int64(buf.Len()), ModifiedAt: m.clock.Now()}
		return false, nil
	})
	return entry, err
}

// DeleteFile removes a file or a directory with its contents. A session
// without a sandbox has no files: ErrNotFound, and no sandbox is started.
func (m *Manager) DeleteFile(ctx context.Context, key Key, p string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	p, err := CleanPath(p)
	if err != nil {
		return err
	}
	if p == "/" || p == WorkDir {
		return Errorf(ErrInvalid, "refusing to delete %s", p)
	}
	return m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
		if err := m.sandboxes.RemoveFile(ctx, s.SandboxID, p); err != nil {
			return true, fmt.Errorf("delete %s: %w", p, err)
		}
		return false, nil
	})
}

// listArgs checks a listing's directory (default the working directory)
// and depth (default 1).
func listArgs(dir string, depth int) (string, int, error) {
	if dir == "" {
		dir = WorkDir
	}
	dir, err := CleanPath(dir)
	if err != nil {
		return "", 0, err
	}
	switch {
	case depth == 0:
		depth = 1
	case depth < 0 || depth > maxListDepth:
		return "", 0, Errorf(ErrInvalid, "depth must be between 1 and %d", maxListDepth)
	}
	return dir, depth, nil
}
