//go:build linux

package jail

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/kernel"
)

// Layout is where a runtime keeps its files.
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
// 108 bytes, so they live in a short, private temp directory, on a tmpfs
// when the host has one at hand (runBase): creating an inode on ext4
// without a journal scans for recently deleted inodes to skip, ~0.5 ms of
// CPU per socket on a busy host against ~0.01 ms on tmpfs.
type Layout struct {
	state   string // DataDir, or a temp dir when DataDir is not traversable
	Shared  string // state/rt-<tag>/{etc,bin/agent,sandboxes/<key>{,.img,.id},orphans/<id>{,.img}}, removed at Close
	runRoot string // <id>.sock, 0700
	agent   string // Config.Agent: the agent executable installed, "" for our own
	temp    []string
}

// Everything is per runtime (tag = pid-random): sandboxes bind the
// generated /etc and the agent binary, so a second runtime on the same
// DataDir must not rebuild them in place, and sandboxes do not outlive their
// runtime, so what a killed runtime left behind is removed by the next.
// With recoverHomes, the homes it left, images or plain dirs (its
// sandboxes' and the orphans it had not handed on), are unmounted and
// moved to this runtime's OrphanDir first, for creates to adopt (Runtime's Config.RecoverHomes).
func NewLayout(dataDir, agent, tag string, root, recoverHomes bool, log *slog.Logger) (*Layout, error) {
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	l, err := newLayout(dataDir, agent, tag, root)
	if err != nil {
		return nil, err
	}
	var keep func(string)
	if recoverHomes {
		keep = func(dead string) { l.salvageHomes(dead, log) }
	}
	for _, base := range slices.Compact([]string{os.TempDir(), runBase()}) {
		removeStale(filepath.Join(base, "e2bl-*-*-*"), 2, log, claimTemp(dataDir, keep))
	}
	removeStale(filepath.Join(dataDir, "rt-*-*"), 1, log, func(string) (bool, func(string)) { return true, keep })
	return l, nil
}

// ownerFile, in a temp dir a runtime makes, names the data dir it serves:
// the temp dirs of every runtime on the host share one parent.
const ownerFile = "data-dir"

// claimTemp decides what a runtime on dataDir does with a dead runtime's
// temp dir: its own data dir's (its homes, for keep) and those whose data
// dir is gone or unnamed (a socket dir, or one from before ownerFile) it
// removes; another data dir's it leaves, with the homes in it, for that
// data dir's next runtime to salvage.
func claimTemp(dataDir string, keep func(string)) func(string) (bool, func(string)) {
	return func(dead string) (bool, func(string)) {
		owner, err := os.ReadFile(filepath.Join(dead, ownerFile))
		switch {
		case err != nil:
			return true, nil
		case string(owner) == dataDir:
			return true, keep
		}
		if _, err := os.Stat(string(owner)); errors.Is(err, os.ErrNotExist) {
			return true, nil
		}
		return false, nil
	}
}

func newLayout(dataDir, agent, tag string, root bool) (*Layout, error) {
	var err error
	l := &Layout{state: dataDir, agent: agent}
	if root && !traversable(dataDir) {
		dir, err := os.MkdirTemp("", tempPrefix("state"))
		if err != nil {
			return nil, fmt.Errorf("create state dir: %w", err)
		}
		l.temp = append(l.temp, dir)
		l.state = dir
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(dataDir), 0o600); err != nil {
			return nil, errors.Join(fmt.Errorf("create state dir: %w", err), l.Close())
		}
	}
	l.Shared = filepath.Join(l.state, "rt-"+tag)
	l.temp = append(l.temp, l.Shared)
	if l.runRoot, err = os.MkdirTemp(runBase(), tempPrefix("run")); err != nil {
		return nil, errors.Join(fmt.Errorf("create socket dir: %w", err), l.Close())
	}
	l.temp = append(l.temp, l.runRoot)
	if err := os.Chmod(l.state, 0o711); err != nil {
		return nil, errors.Join(fmt.Errorf("chmod %s: %w", l.state, err), l.Close())
	}
	if err := l.prepare(); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

func (l *Layout) prepare() error {
	if err := os.MkdirAll(l.Shared, 0o711); err != nil {
		return fmt.Errorf("create runtime dir: %w", err)
	}
	if err := os.Chmod(l.Shared, 0o711); err != nil {
		return fmt.Errorf("chmod runtime dir: %w", err)
	}
	if err := buildEtc(l.EtcDir()); err != nil {
		return err
	}
	if err := os.WriteFile(l.NetResolvConf(), []byte(netResolvConf), 0o644); err != nil {
		return fmt.Errorf("write resolv.conf for networked sandboxes: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(l.Shared, "sandboxes"), 0o711); err != nil {
		return fmt.Errorf("create sandboxes dir: %w", err)
	}
	if err := os.Chmod(filepath.Join(l.Shared, "sandboxes"), 0o711); err != nil {
		return fmt.Errorf("chmod sandboxes dir: %w", err)
	}
	return installAgent(l.agent, l.AgentBin())
}

// CompileKernel compiles the code interpreter's kernel for python into a
// directory every sandbox uid may read, returning the .pyc.
func (l *Layout) CompileKernel(python string) (string, error) {
	dir := filepath.Join(l.Shared, "kernel")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create kernel dir: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("chmod kernel dir: %w", err)
	}
	return kernel.Compile(python, dir)
}

func (l *Layout) EtcDir() string        { return filepath.Join(l.Shared, "etc") }
func (l *Layout) NetResolvConf() string { return filepath.Join(l.Shared, "resolv-net.conf") }
func (l *Layout) AgentBin() string      { return filepath.Join(l.Shared, "bin", "agent") }

// A sandbox's one directory is its home (bwrap binds it, its image is
// mounted on it): on the ext4 without a journal that holds the data dir
// here, creating an inode costs ~0.4 ms of CPU on a busy host, so a spawn
// makes two, the home and its image, beside each other.
func (l *Layout) SandboxDir(id string) string { return filepath.Join(l.Shared, "sandboxes", id) }
func (l *Layout) HomeDir(id string) string    { return l.SandboxDir(id) }
func (l *Layout) HomeImage(id string) string  { return l.SandboxDir(id) + ".img" }
func (l *Layout) HomeTemplate() string        { return filepath.Join(l.Shared, "home-template.img") }
func (l *Layout) SocketPath(id string) string { return filepath.Join(l.runRoot, id+".sock") }

// HomeIDFile holds the id of the sandbox whose home is named key (owner
// only), so that a runtime salvaging a dead one's homes can name each by
// its sandbox id while the home's own names reveal none.
func (l *Layout) HomeIDFile(key string) string { return l.SandboxDir(key) + ".id" }

// OrphanDir holds the homes a runtime that died left, named by their
// sandbox ids, until a create adopts one or they expire (Runtime's
// Config.OrphanTTL); owner only, removed at Close with the rest of Shared.
func (l *Layout) OrphanDir() string { return filepath.Join(l.Shared, "orphans") }

// OrphanImage is where the home image of sandbox id waits to be adopted.
func (l *Layout) OrphanImage(id string) string { return filepath.Join(l.OrphanDir(), id+".img") }

// OrphanHome is where the plain-directory home of sandbox id (no image:
// a runtime that is not root, or homes kept plain) waits to be adopted.
func (l *Layout) OrphanHome(id string) string { return filepath.Join(l.OrphanDir(), id) }

// salvageHomes moves the homes below dead (a dead runtime's dir, its homes
// unmounted) to OrphanDir: its sandboxes' homes, images or plain dirs, and
// the orphans it had itself salvaged and not handed on. A home whose
// sandbox was never handed to a create (no id file: a warm tree) is left
// to be removed with dead. The time of salvage is the orphan's mtime, the
// start of its Config.OrphanTTL; an orphan salvaged again keeps its own.
func (l *Layout) salvageHomes(dead string, log *slog.Logger) {
	homes := salvageable(dead)
	if len(homes) == 0 {
		return
	}
	unix.Sync() // what the lazily detached homes still held reaches their images
	if err := os.MkdirAll(l.OrphanDir(), 0o700); err != nil {
		log.Warn("e2blocal: cannot keep the homes of a dead runtime", "error", err)
		return
	}
	now := time.Now()
	for _, h := range homes {
		to := l.OrphanHome(h.id)
		if h.image {
			to = l.OrphanImage(h.id)
		}
		since := now
		if h.orphan {
			if fi, err := os.Lstat(h.path); err == nil {
				since = fi.ModTime()
			}
		}
		if err := os.Rename(h.path, to); err != nil {
			// Another file system (the homes moved between the data dir
			// and the temp dir): the files are lost with it, said so.
			log.Warn("e2blocal: cannot keep the home of a dead runtime's sandbox", "sandbox", h.id, "error", err)
			continue
		}
		_ = os.Chtimes(to, since, since)
	}
}

// deadHome is a home a dead runtime left: an image or a plain dir, one of
// its sandboxes' (orphan false) or one it had salvaged itself.
type deadHome struct {
	path, id      string
	image, orphan bool
}

// salvageable lists the homes below dead worth keeping.
func salvageable(dead string) []deadHome {
	var homes []deadHome
	for _, rt := range append([]string{dead}, globDirs(filepath.Join(dead, "rt-*"))...) {
		homes = append(homes, liveHomes(filepath.Join(rt, "sandboxes"))...)
		entries, _ := os.ReadDir(filepath.Join(rt, "orphans"))
		for _, e := range entries {
			name, image := strings.CutSuffix(e.Name(), ".img")
			if image == e.Type().IsRegular() && (image || e.IsDir()) && validName(name) {
				homes = append(homes, deadHome{path: filepath.Join(rt, "orphans", e.Name()), id: name, image: image, orphan: true})
			}
		}
	}
	return homes
}

// liveHomes are the homes in a dead runtime's sandboxes dir that a create
// had been given (an id file names the sandbox): the image when there is
// one, else the plain dir (with an image, the dir was only its mount point).
func liveHomes(dir string) []deadHome {
	ids, _ := filepath.Glob(filepath.Join(dir, "*.id"))
	var homes []deadHome
	for _, idFile := range ids {
		key := strings.TrimSuffix(idFile, ".id")
		b, err := os.ReadFile(idFile)
		id := strings.TrimSpace(string(b))
		if err != nil || !validName(id) {
			continue
		}
		if fi, err := os.Lstat(key + ".img"); err == nil && fi.Mode().IsRegular() {
			homes = append(homes, deadHome{path: key + ".img", id: id, image: true})
		} else if fi, err := os.Lstat(key); err == nil && fi.IsDir() {
			homes = append(homes, deadHome{path: key, id: id})
		}
	}
	return homes
}

// validName: a sandbox id names one entry of OrphanDir and no other path.
func validName(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, "/\\.")
}

func globDirs(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return slices.DeleteFunc(m, func(p string) bool {
		fi, err := os.Lstat(p)
		return err != nil || !fi.IsDir()
	})
}

// RemoveOrphans removes the orphans salvaged before cutoff (they can no
// longer be adopted) and returns how many it removed.
func (l *Layout) RemoveOrphans(cutoff time.Time) (int, error) {
	entries, err := os.ReadDir(l.OrphanDir())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("list orphan homes: %w", err)
	}
	n := 0
	var errs []error
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(l.OrphanDir(), e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove an expired orphan home: %w", err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func (l *Layout) Close() error {
	var errs []error
	for _, d := range l.temp {
		// A tree that outlived Close still has its home mounted.
		if err := unmountBelow(d); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// Temp dirs are named e2bl-<kind>-<pid>-*, so that a runtime can remove
// those of runtimes that died without cleaning up (SIGKILL, crash).
func tempPrefix(kind string) string {
	return fmt.Sprintf("e2bl-%s-%d-", kind, os.Getpid())
}

// removeStale unmounts what is mounted below the dirs matching pattern
// whose name carries, as its field pidField ('-'-separated), the pid of a
// process that is gone, and removes those claim takes; the keep claim
// returns, when set, first takes what it wants from each.
func removeStale(pattern string, pidField int, log *slog.Logger, claim func(dir string) (take bool, keep func(dir string))) {
	dirs, _ := filepath.Glob(pattern)
	for _, d := range dirs {
		parts := strings.Split(filepath.Base(d), "-")
		if len(parts) <= pidField {
			continue
		}
		if _, err := strconv.Atoi(parts[pidField]); err != nil {
			continue
		}
		if _, err := os.Stat("/proc/" + parts[pidField]); errors.Is(err, os.ErrNotExist) {
			// The dead runtime's sandbox homes are still mounted, holding
			// loop devices, whoever takes the dir: unmounted, an image
			// keeps its files, and removing a home's contents frees its
			// image only then.
			if err := unmountBelow(d); err != nil {
				log.Warn("e2blocal: cannot remove the leftovers of a dead runtime", "dir", d, "error", err)
				continue
			}
			take, keep := claim(d)
			if !take {
				continue
			}
			if keep != nil {
				keep(d)
			}
			_ = os.RemoveAll(d)
		}
	}
}

// runBase is where the socket directory goes: $XDG_RUNTIME_DIR or
// /dev/shm when it is a tmpfs, else the system temp dir. The directory
// itself is 0700 with a random name, so a shared, sticky /dev/shm is as
// private as /tmp; sandboxes have their own /dev/shm.
func runBase() string {
	for _, d := range []string{os.Getenv("XDG_RUNTIME_DIR"), "/dev/shm"} {
		var st unix.Statfs_t
		if d != "" && filepath.IsAbs(d) && unix.Statfs(d, &st) == nil && st.Type == unix.TMPFS_MAGIC && unix.Access(d, unix.W_OK|unix.X_OK) == nil {
			return d
		}
	}
	return os.TempDir()
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

// installAgent puts the agent executable (src, or this executable when src
// is "") where sandboxes can read it: a hard link when possible (instant,
// same inode), else a copy. It is refreshed at every start so a rebuilt
// binary is picked up.
func installAgent(src, dst string) error {
	exe, err := agentSource(src)
	if err != nil {
		return err
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
	return CopyFile(exe, dst, 0o755)
}

// agentSource is the agent executable to install: src, which must be a
// regular file with execute permission, or this process's own binary.
func agentSource(src string) (string, error) {
	if src == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find own executable: %w", err)
		}
		return exe, nil
	}
	fi, err := os.Stat(src)
	if err != nil {
		return "", fmt.Errorf("e2blocal: agent executable: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("e2blocal: agent executable %s is not an executable file (mode %s)", src, fi.Mode())
	}
	return filepath.Abs(src)
}

func CopyFile(src, dst string, mode os.FileMode) error {
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
