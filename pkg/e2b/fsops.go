package e2b

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// ListOptions tune List.
type ListOptions struct {
	User string
	// Depth is how many levels to descend; 0 means 1 (the directory itself).
	Depth int
}

// List returns the entries of a directory.
func (f *Filesystem) List(ctx context.Context, path string, opts ListOptions) ([]EntryInfo, error) {
	depth := opts.Depth
	if depth < 1 {
		depth = 1
	}
	req := connect.NewRequest(&filesystem.ListDirRequest{Path: path, Depth: uint32(depth)})
	basicUser(req.Header(), f.sb.user(opts.User))
	res, err := f.sb.envd.fs.ListDir(ctx, req)
	if err != nil {
		return nil, wrapErr("files.list", f.sb.ID, err)
	}
	out := make([]EntryInfo, 0, len(res.Msg.GetEntries()))
	for _, e := range res.Msg.GetEntries() {
		if e.GetType() == filesystem.FileType_FILE_TYPE_UNSPECIFIED {
			continue // entries envd cannot classify are skipped, as by the official SDKs
		}
		out = append(out, entryFromPB(e))
	}
	return out, nil
}

// Stat describes one path. Missing paths match ErrNotFound.
func (f *Filesystem) Stat(ctx context.Context, path string, opts FileOptions) (*EntryInfo, error) {
	req := connect.NewRequest(&filesystem.StatRequest{Path: path})
	basicUser(req.Header(), f.sb.user(opts.User))
	res, err := f.sb.envd.fs.Stat(ctx, req)
	if err != nil {
		return nil, wrapErr("files.stat", f.sb.ID, err)
	}
	e := entryFromPB(res.Msg.GetEntry())
	return &e, nil
}

// Exists reports whether path exists.
func (f *Filesystem) Exists(ctx context.Context, path string, opts FileOptions) (bool, error) {
	_, err := f.Stat(ctx, path, opts)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound) && !errors.Is(err, ErrSandboxNotFound):
		return false, nil
	}
	return false, err
}

// MakeDir creates a directory and its parents. It reports false (and no
// error) when the directory already existed.
func (f *Filesystem) MakeDir(ctx context.Context, path string, opts FileOptions) (bool, error) {
	req := connect.NewRequest(&filesystem.MakeDirRequest{Path: path})
	basicUser(req.Header(), f.sb.user(opts.User))
	if _, err := f.sb.envd.fs.MakeDir(ctx, req); err != nil {
		if connect.CodeOf(err) == connect.CodeAlreadyExists {
			return false, nil
		}
		return false, wrapErr("files.makeDir", f.sb.ID, err)
	}
	return true, nil
}

// Rename moves oldPath to newPath and describes the result.
func (f *Filesystem) Rename(ctx context.Context, oldPath, newPath string, opts FileOptions) (*EntryInfo, error) {
	req := connect.NewRequest(&filesystem.MoveRequest{Source: oldPath, Destination: newPath})
	basicUser(req.Header(), f.sb.user(opts.User))
	res, err := f.sb.envd.fs.Move(ctx, req)
	if err != nil {
		return nil, wrapErr("files.rename", f.sb.ID, err)
	}
	e := entryFromPB(res.Msg.GetEntry())
	return &e, nil
}

// Remove deletes a file or a directory tree.
func (f *Filesystem) Remove(ctx context.Context, path string, opts FileOptions) error {
	req := connect.NewRequest(&filesystem.RemoveRequest{Path: path})
	basicUser(req.Header(), f.sb.user(opts.User))
	if _, err := f.sb.envd.fs.Remove(ctx, req); err != nil {
		return wrapErr("files.remove", f.sb.ID, err)
	}
	return nil
}
