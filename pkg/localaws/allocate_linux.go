package localaws

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate reserves n bytes of disk for f without writing them.
func allocate(f *os.File, n int64) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, n)
}
