//go:build linux

package envd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// resolvePath turns a client path into an absolute, clean one, against the
// home of the user the request acts as (as E2B's envd does: a relative path
// of a `root` request lands under /root): empty means that home, `~` and
// `~/x` expand to it, relative paths resolve against it. `~other` is
// refused, as in E2B.
func (s *Server) resolvePath(ctx context.Context, p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("path contains a NUL byte")
	}
	home := s.home(ctx)
	if p == "" {
		return home, nil
	}
	if p[0] == '~' {
		if len(p) > 1 && p[1] != '/' {
			return "", fmt.Errorf("cannot expand user-specific home dir in path '%s'", p)
		}
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(home, p)
	}
	return filepath.Clean(p), nil
}

// home is the home directory of the user a request acts as.
func (s *Server) home(ctx context.Context) string {
	if _, a, ok := s.account(ctx); ok && a.Home != "" {
		return a.Home
	}
	return s.cfg.Home
}

// ensureDirs makes dir and its missing parents the way E2B's envd does:
// each one it creates is made by root and handed to the requesting user,
// so a user may write below a directory it could not create in (the path
// `/0/f` of the SDK's tests), and owns what was made for it. Directories
// that exist are left as they are. Without accounts the server has one
// identity and creates them as itself.
//
// The user tries first, on its own thread: a directory it may make is born
// its own, so a concurrent write as the user never meets one that root has
// made and not yet handed over (two uploads into a new folder at once).
// Only where the user may not create does root step in.
func (s *Server) ensureDirs(ctx context.Context, dir string) error {
	_, a, ok := s.account(ctx)
	if !ok || !actsAsAccount(ctx) {
		return mkdirAll(dir, nil)
	}
	if err := mkdirAll(dir, nil); !errors.Is(err, os.ErrPermission) {
		return err
	}
	return asServer(a, func() error { return mkdirAll(dir, &a) })
}

// mkdirAll creates dir and its missing parents with mode 0755, giving each
// one it creates to owner when set. A component that exists but is not a
// directory is ENOTDIR.
func mkdirAll(dir string, owner *Account) error {
	var missing []string
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		if err == nil {
			if !info.IsDir() {
				return &os.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) || p == filepath.Dir(p) {
			return err
		}
		missing = append(missing, p)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		err := os.Mkdir(p, 0o755)
		if errors.Is(err, os.ErrExist) {
			// Made meanwhile by someone else: theirs, unless it is no directory.
			if info, serr := os.Stat(p); serr == nil && info.IsDir() {
				continue
			}
		}
		if err != nil {
			return err
		}
		if owner != nil {
			if err := os.Lchown(p, int(owner.UID), int(owner.GID)); err != nil {
				return err
			}
		}
	}
	return nil
}
