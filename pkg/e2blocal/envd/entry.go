//go:build linux

package envd

import (
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// idNames caches uid and gid lookups; ListDir on a big tree would otherwise
// re-read /etc/passwd per entry.
type idNames struct {
	mu     sync.Mutex
	users  map[uint32]string
	groups map[uint32]string
}

func newIDNames() *idNames {
	return &idNames{users: map[uint32]string{}, groups: map[uint32]string{}}
}

func (n *idNames) user(uid uint32) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if name, ok := n.users[uid]; ok {
		return name
	}
	name := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	n.users[uid] = name
	return name
}

func (n *idNames) group(gid uint32) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if name, ok := n.groups[gid]; ok {
		return name
	}
	name := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(name); err == nil {
		name = g.Name
	}
	n.groups[gid] = name
	return name
}

func fileType(mode fs.FileMode) filesystem.FileType {
	switch {
	case mode&fs.ModeSymlink != 0:
		return filesystem.FileType_FILE_TYPE_SYMLINK
	case mode.IsDir():
		return filesystem.FileType_FILE_TYPE_DIRECTORY
	case mode.IsRegular():
		return filesystem.FileType_FILE_TYPE_FILE
	default:
		return filesystem.FileType_FILE_TYPE_UNSPECIFIED
	}
}

// entryInfo describes path (not following a final symlink) as EntryInfo,
// reporting it under shownPath.
func (s *Server) entryInfo(path, shownPath string) (*filesystem.EntryInfo, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	return s.entryFromInfo(path, shownPath, info), nil
}

func (s *Server) entryFromInfo(path, shownPath string, info fs.FileInfo) *filesystem.EntryInfo {
	e := &filesystem.EntryInfo{
		Name:         filepath.Base(shownPath),
		Type:         fileType(info.Mode()),
		Path:         shownPath,
		Size:         info.Size(),
		Mode:         uint32(info.Mode().Perm()),
		Permissions:  info.Mode().String(),
		ModifiedTime: timestamppb.New(info.ModTime()),
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		e.Owner = s.ids.user(st.Uid)
		e.Group = s.ids.group(st.Gid)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if target, ok := symlinkTarget(path); ok {
			e.SymlinkTarget = &target
		}
		return e
	}
	if md, err := readMetadata(path); err == nil && len(md) > 0 {
		e.Metadata = md
	}
	return e
}

// symlinkTarget is where the link at path leads, as E2B reports it: the
// absolute path with every link resolved. A dangling or looping link has no
// resolved path; its own text, made absolute, still says where it points.
func symlinkTarget(path string) (string, bool) {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		return target, true
	}
	target, err := os.Readlink(path)
	if err != nil {
		return "", false
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(path), target)
	}
	return filepath.Clean(target), true
}
