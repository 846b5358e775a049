//go:build linux

package jail

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox's /home/user is, when the runtime can make one, its own sparse
// ext4 image of Config.DiskMB loop-mounted on the host dir that bwrap binds,
// so a sandbox that fills its home gets ENOSPC instead of filling the file
// system that holds DataDir. Facts relied on (Debian bookworm, e2fsprogs
// 1.47, kernel 6.18): mkfs.ext4 of a 10 GiB sparse file without a journal
// allocates ~230 kB and takes ~4 ms of CPU, but 10-70 ms of wall time when
// several run at once (a fork and exec, and four fsyncs); so each runtime
// formats one template and every home is a copy of its data extents
// (copy_file_range, well under a millisecond), its root then given to the
// sandbox's uid. The homes of a runtime share the file system's UUID and
// directory hash seed; each is still its own file system on its own loop
// device. LOOP_CTL_GET_FREE allocates loop
// devices on demand (the udev-less /dev still gets /dev/loopN from
// devtmpfs); LOOP_CONFIGURE with LO_FLAGS_AUTOCLEAR frees the device when
// its last user (the mount) goes, so no loop device needs tracking.
// LOOP_CONFIGURE fsyncs the image (kernel 6.18), writing what the copy
// dirtied: the template keeps no backup superblocks (sparse_super2,
// num_backup_sb=0), which leaves 13 data extents to copy and write instead
// of 20; and it holds no lost+found (debugfs removes it once), which
// otherwise cost an rmdir of ~0.3 ms of CPU on every home. A home is
// mounted with noinit_itable and no_prefetch_block_bitmaps: the kernel's
// ext4lazyinit thread would otherwise zero the inode tables of every home
// (holes of a sparse file, read as zeros already) and read all its block
// bitmaps in the background, work per sandbox that nothing needs.

// HomeImages makes and removes image-backed homes; nil means homes are
// plain directories.
type HomeImages struct {
	mkfs string
	mb   int
	// debugfs edits the template (removes its lost+found); "" when the
	// host lacks it, and every home removes its own.
	debugfs string
	// template is where the formatted image every home copies is kept;
	// "" formats each home itself.
	template string
	tmplOnce sync.Once
	tmplErr  error
	log      *slog.Logger // says once why there is no template
	// tmplLostFound: removing the template's lost+found failed (or there
	// is no debugfs), so each home removes its own.
	TmplLostFound bool
}

// DetectHomeImages reports whether image homes are possible: root (mount,
// loop devices), mkfs.ext4 and /dev/loop-control. why says what is missing.
// template is where the formatted image homes are copied from is kept.
func DetectHomeImages(root bool, diskMB int, template string, log *slog.Logger) (h *HomeImages, why string) {
	if !root {
		return nil, "the runtime is not root"
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return nil, "mkfs.ext4 is not installed"
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return nil, "/dev/loop-control is missing"
	}
	debugfs, _ := exec.LookPath("debugfs") // e2fsprogs, as mkfs.ext4
	return &HomeImages{mkfs: mkfs, debugfs: debugfs, mb: diskMB, template: template, log: log}, ""
}

// Mount creates img, a copy of the template (or, without one, formatted
// itself), mounts it on dir (nosuid, nodev; not noexec: users run their
// own scripts from home) and gives its root to uid.
func (h *HomeImages) Mount(ctx context.Context, img, dir string, uid int) error {
	f, err := os.OpenFile(img, os.O_CREATE|os.O_EXCL|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create home image: %w", err)
	}
	defer f.Close()
	if uid < 0 {
		uid = os.Geteuid()
	}
	hasLostFound, err := h.fill(ctx, f)
	if err != nil {
		return err
	}
	if err := loopMount(ctx, f, dir); err != nil {
		return err
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		return errors.Join(fmt.Errorf("chown home: %w", err), UnmountHome(dir))
	}
	// lost+found is root's and would show up in every listing of home;
	// e2fsck recreates it should it ever be needed.
	if hasLostFound {
		_ = os.Remove(filepath.Join(dir, "lost+found"))
	}
	return nil
}

// Adopt mounts img, an earlier sandbox's home, on dir and gives its
// files to this sandbox: the earlier sandbox's user (the owner of the
// image's root) becomes uid, and its root (rootShift below it, as
// UIDPool leases them) becomes uid-rootShift. The image stays where it is.
func (h *HomeImages) Adopt(ctx context.Context, img, dir string, uid, rootShift int) error {
	f, err := os.OpenFile(img, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open earlier home image: %w", err)
	}
	defer f.Close()
	if err := loopMount(ctx, f, dir); err != nil {
		return err
	}
	if err := chownTree(dir, uid, rootShift); err != nil {
		return errors.Join(err, UnmountHome(dir))
	}
	return nil
}

// chownTree moves dir's files from the uids of the sandbox that made them
// to uid (its user) and uid-rootShift (its root).
func chownTree(dir string, uid, rootShift int) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("stat earlier home: %w", err)
	}
	oldUser := int(st.Uid)
	if oldUser == uid {
		return nil
	}
	to := func(old int) (int, bool) {
		switch {
		case old == oldUser:
			return uid, true
		case rootShift > 0 && old == oldUser-rootShift:
			return uid - rootShift, true
		}
		return 0, false
	}
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err
		}
		u, uok := to(int(st.Uid))
		g, gok := to(int(st.Gid))
		if !uok && !gok {
			return nil
		}
		if !uok {
			u = -1
		}
		if !gok {
			g = -1
		}
		// Lchown drops set-id bits; the walk puts the mode back.
		if err := os.Lchown(path, u, g); err != nil {
			return fmt.Errorf("give earlier home to the new sandbox: %w", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			_ = unix.Chmod(path, st.Mode&0o7777)
		}
		return nil
	})
}

// fill makes f a fresh file system of the home's size: a copy of the
// template when there is one, else formatted in place. It says whether the
// file system still has its lost+found.
func (h *HomeImages) fill(ctx context.Context, f *os.File) (hasLostFound bool, err error) {
	size := int64(h.mb) << 20
	if h.template != "" {
		h.tmplOnce.Do(func() { h.TmplLostFound, h.tmplErr = h.firstTemplate(ctx, size) })
		if h.tmplErr == nil {
			return h.TmplLostFound, copyImage(f, h.template, size)
		}
	}
	if err := f.Truncate(size); err != nil {
		return false, fmt.Errorf("size home image: %w", err)
	}
	return true, h.format(ctx, f.Name(), false)
}

// firstTemplate makes the template for the runtime's life: on a context
// of its own, so that the first home's caller giving up does not leave
// every later home formatting itself, and a failure is logged, once.
func (h *HomeImages) firstTemplate(ctx context.Context, size int64) (hasLostFound bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), HomeMountTimeout)
	defer cancel()
	hasLostFound, err = h.makeTemplate(ctx, size)
	if err != nil {
		h.log.Warn("e2blocal: no home template; every home formats its own image", "error", err)
	}
	return hasLostFound, err
}

// makeTemplate formats the image every home of this runtime copies and
// removes its lost+found, saying whether that is still there.
func (h *HomeImages) makeTemplate(ctx context.Context, size int64) (hasLostFound bool, err error) {
	f, err := os.OpenFile(h.template, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false, fmt.Errorf("create home template: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("size home template: %w", err)
	}
	if err := h.format(ctx, h.template, true); err != nil {
		return false, err
	}
	if h.debugfs == "" {
		return true, nil
	}
	// debugfs reports a failed request on stderr but exits 0: the
	// directory's absence is checked instead, in the same session.
	cmd := exec.CommandContext(ctx, h.debugfs, "-w", "-f", "-", h.template)
	cmd.Stdin = strings.NewReader("rmdir lost+found\nls -l /\n")
	out, err := cmd.Output()
	if err != nil {
		return true, nil
	}
	for _, line := range strings.Split(string(out), "\n") {
		// With -f debugfs echoes each request ("debugfs: rmdir ...").
		if !strings.HasPrefix(line, "debugfs:") && strings.HasSuffix(strings.TrimSpace(line), " lost+found") {
			return true, nil
		}
	}
	return false, nil
}

// format makes the sparse file img an empty ext4 file system whose root
// is the runtime's until mount gives it away. A template (copied for
// every home) also keeps no backup superblocks.
func (h *HomeImages) format(ctx context.Context, img string, template bool) error {
	// No journal (the data does not outlive the runtime), no root reserve
	// (the sandbox gets all of DiskMB), no blocks reserved for growing the
	// file system (halves mkfs time, 4 MB less written per 10 GiB), inode
	// tables initialised lazily. mke2fs keeps the last -E only.
	features, ext := "^has_journal,^resize_inode", "lazy_itable_init=1,nodiscard"
	if template {
		features, ext = features+",sparse_super2", ext+",num_backup_sb=0"
	}
	out, err := exec.CommandContext(ctx, h.mkfs, "-q", "-F", "-m", "0", "-O", features, "-E", ext, img).CombinedOutput()
	if err != nil {
		return fmt.Errorf("format home image: %w (%s)", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// copyImage makes dst a copy of the sparse image at src, size bytes long:
// only src's data extents are copied (in the kernel), its holes stay holes.
func copyImage(dst *os.File, src string, size int64) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open home template: %w", err)
	}
	defer in.Close()
	if err := dst.Truncate(size); err != nil {
		return fmt.Errorf("size home image: %w", err)
	}
	rfd, wfd := int(in.Fd()), int(dst.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(rfd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // only a hole is left
		}
		if err != nil {
			return fmt.Errorf("find data in home template: %w", err)
		}
		end, err := unix.Seek(rfd, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("find hole in home template: %w", err)
		}
		for woff := data; data < end; woff = data {
			n, err := unix.CopyFileRange(rfd, &data, wfd, &woff, int(end-data), 0)
			if err != nil {
				return fmt.Errorf("copy home template: %w", err)
			}
			if n == 0 {
				return fmt.Errorf("copy home template: %w", io.ErrUnexpectedEOF)
			}
		}
		off = end
	}
	return nil
}

// loopMount attaches f to a free loop device and mounts it on dir. Another
// process may take the device between GET_FREE and CONFIGURE (EBUSY): ask
// again.
func loopMount(ctx context.Context, f *os.File, dir string) error {
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open loop-control: %w", err)
	}
	defer unix.Close(ctl)
	for ctx.Err() == nil {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return fmt.Errorf("get free loop device: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(f.Fd()), Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}}
		err = unix.IoctlLoopConfigure(fd, &cfg)
		if errors.Is(err, unix.EBUSY) {
			unix.Close(fd)
			continue
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("configure %s: %w", dev, err)
		}
		// Closing fd after the mount leaves the mount as the device's only
		// user; if the mount fails, closing it frees the device (autoclear).
		err = unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, HomeMountOptions)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("mount %s on %s: %w", dev, dir, err)
		}
		return nil
	}
	return fmt.Errorf("attach loop device: %w", ctx.Err())
}

// HomeMountOptions keep the kernel's ext4lazyinit thread away from homes
// (see the top of this file); discard makes ext4 tell the loop device
// about the blocks a deleted file frees, and the loop device punches them
// out of the image, so space freed inside a sandbox returns to the host.
const HomeMountOptions = "noinit_itable,no_prefetch_block_bitmaps,discard"

// UnmountHome unmounts dir, detaching it lazily when something still holds
// it (a straggling tree's open file). Not mounted is fine.
func UnmountHome(dir string) error {
	err := unix.Unmount(dir, unix.UMOUNT_NOFOLLOW)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}

// unmountBelow unmounts every mount point at or below dir (deepest first),
// so that removing dir never walks into, or fails on, a mounted home: the
// homes of a runtime that died, or of trees still alive at Close.
func unmountBelow(dir string) error {
	// mountinfo names mount points by their resolved paths.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	points, err := MountPoints()
	if err != nil {
		return err
	}
	var below []string
	for _, p := range points {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			below = append(below, p)
		}
	}
	sort.Slice(below, func(i, j int) bool { return len(below[i]) > len(below[j]) })
	var errs []error
	for _, p := range below {
		if err := unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// MountPoints lists the mount points of our mount namespace.
func MountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			out = append(out, UnescapeMount(fields[4]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// UnescapeMount undoes mountinfo's octal escapes (\040 for a space).
func UnescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// HomeStatfs reports the used and total bytes of a mounted home image.
func HomeStatfs(dir string) (used, total int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := int64(st.Bsize)
	return int64(st.Blocks-st.Bfree) * bs, int64(st.Blocks) * bs, nil
}

// HomeMountTimeout bounds mkfs and the loop set-up of one home.
const HomeMountTimeout = 10 * time.Second
