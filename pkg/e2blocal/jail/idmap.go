//go:build linux

package jail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// bwrapIO are the descriptors bwrap reads beyond the agent's: the seccomp
// program, and for a sandbox with root the user namespace's block pipe and
// bwrap's info pipe (it reports the namespace's first pid there).
type bwrapIO struct {
	childEnds []*os.File
	unblock   *os.File // we write one byte once the maps are written
	info      *os.File // bwrap's JSON, EOF once it closes
}

// bwrapFiles makes them, numbering them from first in bwrap's descriptor
// table and recording the numbers in s.
func bwrapFiles(s *LaunchSpec, first int) (*bwrapIO, error) {
	bw := &bwrapIO{}
	add := func(f *os.File) int {
		bw.childEnds = append(bw.childEnds, f)
		return first + len(bw.childEnds) - 1
	}
	if s.Seccomp != nil {
		f, err := seccompFile(s.Seccomp)
		if err != nil {
			return nil, err
		}
		s.seccompFD = add(f)
	}
	if s.UserUID < 0 {
		return bw, nil
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		bw.closeChildEnds()
		return nil, fmt.Errorf("userns block pipe: %w", err)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		bw.closeChildEnds()
		blockR.Close()
		blockW.Close()
		return nil, fmt.Errorf("bwrap info pipe: %w", err)
	}
	s.blockFD, s.infoFD = add(blockR), add(infoW)
	bw.unblock, bw.info = blockW, infoR
	return bw, nil
}

func (bw *bwrapIO) closeChildEnds() {
	for _, f := range bw.childEnds {
		f.Close()
	}
}

func (bw *bwrapIO) closeOurEnds() {
	for _, f := range []*os.File{bw.unblock, bw.info} {
		if f != nil {
			f.Close()
		}
	}
}

// idMapTimeout bounds the wait for bwrap to report its namespace.
const idMapTimeout = 10 * time.Second

// writeIDMaps maps root inside to rootUID (bwrap's own host uid) and user
// (1000) to userUID, for uids and gids, then lets bwrap go on. Writing a map
// of more than one id needs CAP_SETUID over the parent namespace, which the
// runtime has as root; bwrap alone, unprivileged, could map one id only.
func writeIDMaps(bw *bwrapIO, rootUID, userUID int) error {
	if err := bw.info.SetReadDeadline(time.Now().Add(idMapTimeout)); err != nil {
		return fmt.Errorf("info deadline: %w", err)
	}
	// One JSON object; bwrap's child may still hold the pipe open.
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(io.LimitReader(bw.info, 64<<10)).Decode(&info); err != nil {
		return fmt.Errorf("read bwrap info: %w", err)
	}
	if info.ChildPid <= 0 {
		return errors.New("bwrap info names no child pid")
	}
	m := fmt.Sprintf("0 %d 1\n%d %d 1\n", rootUID, insideUID, userUID)
	for _, f := range []string{"uid_map", "gid_map"} {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/%s", info.ChildPid, f), []byte(m), 0); err != nil {
			return fmt.Errorf("write %s: %w", f, err)
		}
	}
	if _, err := bw.unblock.Write([]byte{1}); err != nil {
		return fmt.Errorf("unblock bwrap: %w", err)
	}
	return nil
}
