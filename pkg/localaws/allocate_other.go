//go:build !linux

package localaws

import "os"

// allocate reserves n bytes of disk for f by writing zeros: a sparse file
// (Truncate) would hold no blocks to give back.
func allocate(f *os.File, n int64) error {
	_, err := f.Write(make([]byte, n))
	return err
}
