//go:build linux

package jail

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A template may bring its own root filesystem: a directory (debootstrap's
// or an exported container's) whose top level sandboxes see instead of the
// host's system directories. Every entry is bound read-only, so sandboxes
// (root inside included: it has no CAP_SYS_ADMIN to remount) cannot change
// the template; their writable places stay the home, /tmp and /dev/shm.
// The runtime's own directories are never taken from it: /proc, /dev,
// /sys, /tmp, /home, /etc (generated from the template's, TemplateEtc),
// /root and /run; /opt and /var are bound entry by entry, so that
// /opt/e2b (the agent, sudo) and /var/tmp (the private /tmp) stay the
// runtime's.
var rootfsOwn = map[string]bool{
	"proc": true, "dev": true, "sys": true, "tmp": true, "home": true,
	"etc": true, "root": true, "run": true, "opt": true, "var": true,
}

// RootfsBinds returns the bwrap options that bind rootfs in place of the
// host's system directories (LaunchSpec.System). They are computed once,
// when the runtime starts: a template is not changed under a running
// runtime.
func RootfsBinds(rootfs string) ([]string, error) {
	args, err := bindEntries(rootfs, "/", rootfsOwn)
	if err != nil {
		return nil, err
	}
	for _, sub := range []struct{ dir, own string }{{"opt", "e2b"}, {"var", "tmp"}} {
		more, err := bindEntries(filepath.Join(rootfs, sub.dir), "/"+sub.dir, map[string]bool{sub.own: true})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		// Made first, as bwrap would make it for the binds inside: 0700.
		args = append(append(args, "--perms", "0755", "--dir", "/"+sub.dir), more...)
	}
	return args, nil
}

// bindEntries binds each entry of src at dst/<name> read-only, symlinks
// recreated as symlinks, skipping the names in skip and anything that is
// neither a directory, a regular file nor a symlink.
func bindEntries(src, dst string, skip map[string]bool) ([]string, error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("read root filesystem: %w", err)
	}
	var args []string
	for _, e := range entries {
		if skip[e.Name()] {
			continue
		}
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		switch t := e.Type(); {
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(from)
			if err != nil {
				return nil, fmt.Errorf("read root filesystem link: %w", err)
			}
			args = append(args, "--symlink", target, to)
		case t.IsDir() || t.IsRegular():
			args = append(args, "--ro-bind", from, to)
		}
	}
	return args, nil
}

// InRootfs resolves path as the sandbox would inside rootfs: its symlinks
// (absolute ones against rootfs, not the host) followed, at most 40 of
// them as the kernel does. It returns the host path and whether it exists.
func InRootfs(rootfs, path string) (string, bool) {
	parts := strings.Split(strings.Trim(filepath.Clean(path), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		name := parts[0]
		parts = parts[1:]
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		host := filepath.Join(rootfs, next)
		fi, err := os.Lstat(host)
		if err != nil {
			return host, false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return host, false
		}
		target, err := os.Readlink(host)
		if err != nil {
			return host, false
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		parts = append(strings.Split(strings.Trim(target, "/"), "/"), parts...)
	}
	host := filepath.Join(rootfs, cur)
	_, err := os.Stat(host)
	return host, err == nil
}

// ExecutableIn reports why path, inside rootfs, cannot be run: missing, not
// an executable file, or an ELF program whose loader rootfs lacks; nil
// when it can (a script's interpreter is not checked).
func ExecutableIn(rootfs, path string) error {
	host, ok := InRootfs(rootfs, path)
	if !ok {
		return fmt.Errorf("%s is missing", path)
	}
	fi, err := os.Stat(host)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	interp, err := elfInterpreter(host)
	if err != nil || interp == "" {
		return nil
	}
	if _, ok := InRootfs(rootfs, interp); !ok {
		return fmt.Errorf("%s needs the dynamic loader %s, which is missing", path, interp)
	}
	return nil
}

// AgentRunsIn reports why the agent executable (a host file, bound in at
// /opt/e2b/agent) cannot start inside rootfs: it is dynamically linked
// and rootfs lacks its loader. The agent built by `make bins` is static.
func AgentRunsIn(agentBin, rootfs string) error {
	interp, err := elfInterpreter(agentBin)
	if err != nil {
		return fmt.Errorf("read agent executable: %w", err)
	}
	if interp == "" {
		return nil
	}
	if _, ok := InRootfs(rootfs, interp); !ok {
		return fmt.Errorf("the agent %s is dynamically linked and the root filesystem lacks its loader %s: use a static agent (CGO_ENABLED=0, as `make bins` builds bin/sessionbox-agent)", agentBin, interp)
	}
	return nil
}

// elfInterpreter is the PT_INTERP of an ELF file, "" for a static one; an
// error for a file that is not ELF.
func elfInterpreter(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", nil
}

// TemplateEtc builds the /etc of sandboxes of a template with a root
// filesystem into dir: the template's own /etc (its world-readable
// entries: it is the template author's, not the host's), with the files
// the runtime writes for every sandbox (EtcGenerated: accounts, name
// service, hosts, shell start-up) over it.
func TemplateEtc(rootfs, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear template etc: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create template etc: %w", err)
	}
	if err := copyTree(filepath.Join(rootfs, "etc"), dir); err != nil {
		return err
	}
	// A template's resolv.conf or localtime is often a symlink: writing
	// through it would land outside dir.
	for name, content := range EtcGenerated {
		p := filepath.Join(dir, name)
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("replace etc/%s: %w", name, err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write etc/%s: %w", name, err)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "localtime")); err != nil {
		return fmt.Errorf("replace etc/localtime: %w", err)
	}
	if err := os.Symlink(EtcZone, filepath.Join(dir, "localtime")); err != nil {
		return fmt.Errorf("link etc/localtime: %w", err)
	}
	return nil
}

// Traversable reports whether every uid may reach dir: bwrap resolves its
// bind sources as the sandbox's host uid.
func Traversable(dir string) bool { return traversable(dir) }

// TemplateEtcDir is where the runtime builds the /etc of template name.
func (l *Layout) TemplateEtcDir(name string) string {
	return filepath.Join(l.Shared, "templates", name, "etc")
}
