//go:build linux

package envd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// maxListEntries bounds one ListDir answer so a deep listing of a huge tree
// cannot exhaust memory.
const maxListEntries = 100_000

var errTooManyEntries = fmt.Errorf("more than %d entries; use a smaller depth", maxListEntries)

// filesystemService implements filesystem.Filesystem.
type filesystemService struct{ s *Server }

func (f *filesystemService) resolve(ctx context.Context, p string) (string, error) {
	path, err := f.s.resolvePath(ctx, p)
	if err != nil {
		return "", connect.NewError(connect.CodeInvalidArgument, err)
	}
	return path, nil
}

func (f *filesystemService) Stat(ctx context.Context, req *connect.Request[filesystem.StatRequest]) (*connect.Response[filesystem.StatResponse], error) {
	path, err := f.resolve(ctx, req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	entry, err := f.s.entryInfo(path, path)
	if err != nil {
		return nil, fsError(fmt.Errorf("stat %s: %w", path, err))
	}
	return connect.NewResponse(&filesystem.StatResponse{Entry: entry}), nil
}

func (f *filesystemService) MakeDir(ctx context.Context, req *connect.Request[filesystem.MakeDirRequest]) (*connect.Response[filesystem.MakeDirResponse], error) {
	path, err := f.resolve(ctx, req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(path); err == nil {
		if info.IsDir() {
			return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("directory already exists: %s", path))
		}
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path already exists but is not a directory: %s", path))
	}
	// As E2B's envd: made by root and handed to the requesting user.
	if err := f.s.ensureDirs(ctx, path); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("a parent of %s is not a directory: %w", path, err))
		}
		return nil, fsError(fmt.Errorf("make directory %s: %w", path, err))
	}
	entry, err := f.s.entryInfo(path, path)
	if err != nil {
		return nil, fsError(err)
	}
	return connect.NewResponse(&filesystem.MakeDirResponse{Entry: entry}), nil
}

func (f *filesystemService) Move(ctx context.Context, req *connect.Request[filesystem.MoveRequest]) (*connect.Response[filesystem.MoveResponse], error) {
	src, err := f.resolve(ctx, req.Msg.GetSource())
	if err != nil {
		return nil, err
	}
	dst, err := f.resolve(ctx, req.Msg.GetDestination())
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(src); err != nil {
		return nil, fsError(fmt.Errorf("move source %s: %w", src, err))
	}
	if err := f.s.ensureDirs(ctx, filepath.Dir(dst)); err != nil {
		return nil, fsError(fmt.Errorf("create parent of %s: %w", dst, err))
	}
	if err := os.Rename(src, dst); err != nil {
		return nil, fsError(fmt.Errorf("move %s to %s: %w", src, dst, err))
	}
	entry, err := f.s.entryInfo(dst, dst)
	if err != nil {
		return nil, fsError(err)
	}
	return connect.NewResponse(&filesystem.MoveResponse{Entry: entry}), nil
}

func (f *filesystemService) Remove(ctx context.Context, req *connect.Request[filesystem.RemoveRequest]) (*connect.Response[filesystem.RemoveResponse], error) {
	path, err := f.resolve(ctx, req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	if path == "/" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("refusing to remove /"))
	}
	// As in E2B, removing what is not there succeeds: the path is gone either way.
	if err := os.RemoveAll(path); err != nil {
		return nil, fsError(fmt.Errorf("remove %s: %w", path, err))
	}
	return connect.NewResponse(&filesystem.RemoveResponse{}), nil
}

// ListDir lists entries up to depth levels below path (0 means 1); a
// symlink given as path is followed, symlinks inside are not.
func (f *filesystemService) ListDir(ctx context.Context, req *connect.Request[filesystem.ListDirRequest]) (*connect.Response[filesystem.ListDirResponse], error) {
	path, err := f.resolve(ctx, req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	depth := int(req.Msg.GetDepth())
	if depth == 0 {
		depth = 1
	}
	realPath, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fsError(fmt.Errorf("resolve %s: %w", path, err))
	}
	info, err := os.Stat(realPath)
	if err != nil {
		return nil, fsError(fmt.Errorf("stat %s: %w", path, err))
	}
	if !info.IsDir() {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path is not a directory: %s", path))
	}
	entries, err := f.walk(ctx, path, realPath, depth)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.ListDirResponse{Entries: entries}), nil
}

func (f *filesystemService) walk(ctx context.Context, shownRoot, realRoot string, depth int) ([]*filesystem.EntryInfo, error) {
	var entries []*filesystem.EntryInfo
	err := filepath.WalkDir(realRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == realRoot {
				return err
			}
			return nil // an unreadable subtree is skipped, not fatal
		}
		if p == realRoot {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if isUploadTemp(d.Name()) {
			return nil // an upload in progress, not yet a file of its own
		}
		rel, _ := filepath.Rel(realRoot, p)
		level := strings.Count(rel, string(filepath.Separator)) + 1
		if level > depth {
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return nil // vanished meanwhile
		}
		if len(entries) >= maxListEntries {
			return errTooManyEntries
		}
		entries = append(entries, f.s.entryFromInfo(p, filepath.Join(shownRoot, rel), info))
		if d.IsDir() && level == depth {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, connect.NewError(ctxCode(ctx.Err()), err)
		case errors.Is(err, errTooManyEntries):
			// The caller's depth is what to change, not a rate to wait out.
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("list %s: %w", shownRoot, err))
		default:
			return nil, fsError(fmt.Errorf("list %s: %w", shownRoot, err))
		}
	}
	return entries, nil
}
