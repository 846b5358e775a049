package e2blocal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// layout is where a runtime keeps its files.
//
// Sandbox trees run as other host uids, and bubblewrap resolves every bind
// source with the sandbox uid's permissions (even --bind-fd: bwrap 0.8 calls
// realpath on /proc/self/fd/N, which walks the original path). So the
// generated /etc, the agent binary and the homes must sit below directories
// that every uid may traverse. DataDir is used when that holds; otherwise
// (a 0700 temp dir from a test, /root/...) the runtime keeps them in a
// private 0711 directory under the system temp dir, removed at Close.
//
// Each agent serves on a unix socket the runtime creates and hands over as
// a descriptor; sandboxes never see its path. Socket paths are limited to
// 108 bytes, so they live in a short, private temp directory.
type layout struct {
	state   string // etc/, bin/agent, sandboxes/<id>/home
	runRoot string // <id>.sock, 0700
	temp    []string
}

func newLayout(dataDir string, root bool) (*layout, error) {
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	l := &layout{state: dataDir}
	if root && !traversable(dataDir) {
		dir, err := os.MkdirTemp("", "e2blocal-state-")
		if err != nil {
			return nil, fmt.Errorf("create state dir: %w", err)
		}
		l.temp = append(l.temp, dir)
		l.state = dir
	}
	if l.runRoot, err = os.MkdirTemp("", "e2bl"); err != nil {
		return nil, errors.Join(fmt.Errorf("create socket dir: %w", err), l.close())
	}
	l.temp = append(l.temp, l.runRoot)
	if err := os.Chmod(l.state, 0o711); err != nil {
		return nil, errors.Join(fmt.Errorf("chmod %s: %w", l.state, err), l.close())
	}
	if err := l.prepare(); err != nil {
		return nil, errors.Join(err, l.close())
	}
	return l, nil
}

func (l *layout) prepare() error {
	if err := buildEtc(l.etcDir()); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(l.state, "sandboxes"), 0o711); err != nil {
		return fmt.Errorf("create sandboxes dir: %w", err)
	}
	if err := os.Chmod(filepath.Join(l.state, "sandboxes"), 0o711); err != nil {
		return fmt.Errorf("chmod sandboxes dir: %w", err)
	}
	return installAgent(l.agentBin())
}

func (l *layout) etcDir() string              { return filepath.Join(l.state, "etc") }
func (l *layout) agentBin() string            { return filepath.Join(l.state, "bin", "agent") }
func (l *layout) sandboxDir(id string) string { return filepath.Join(l.state, "sandboxes", id) }
func (l *layout) homeDir(id string) string    { return filepath.Join(l.sandboxDir(id), "home") }
func (l *layout) socketPath(id string) string { return filepath.Join(l.runRoot, id+".sock") }

func (l *layout) close() error {
	var errs []error
	for _, d := range l.temp {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// traversable reports whether every directory from / down to dir grants
// search permission to other users.
func traversable(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

// installAgent puts this executable where sandboxes can read it: a hard link
// when possible (instant, same inode), else a copy. It is refreshed at every
// start so a rebuilt binary is picked up.
func installAgent(dst string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create agent dir: %w", err)
	}
	if err := os.Chmod(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("chmod agent dir: %w", err)
	}
	_ = os.Remove(dst)
	if err := os.Link(exe, dst); err == nil {
		if fi, err := os.Stat(dst); err == nil && fi.Mode().Perm()&0o005 == 0o005 {
			return nil
		}
		_ = os.Remove(dst)
	}
	return copyFile(exe, dst, 0o755)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_CLOEXEC, mode)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("close %s: %w", dst, err)
	}
	return os.Chmod(dst, mode)
}
