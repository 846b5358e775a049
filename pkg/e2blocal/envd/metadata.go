//go:build linux

package envd

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	metadataHeaderPrefix = "X-Metadata-"
	xattrPrefix          = "user.e2b."
	maxMetadataBytes     = 4096
)

// metadataFromHeaders collects X-Metadata-<key> headers; keys are
// lower-cased (HTTP header names are case-insensitive), values must be
// printable ASCII and the whole set must fit in maxMetadataBytes.
func metadataFromHeaders(h http.Header) (map[string]string, error) {
	var md map[string]string
	total := 0
	for name, values := range h {
		if len(name) <= len(metadataHeaderPrefix) || !strings.EqualFold(name[:len(metadataHeaderPrefix)], metadataHeaderPrefix) {
			continue
		}
		key := strings.ToLower(name[len(metadataHeaderPrefix):])
		value := strings.Join(values, ",")
		if !isPrintableASCII(key) || !isPrintableASCII(value) {
			return nil, fmt.Errorf("metadata %q: keys and values must be printable ASCII", key)
		}
		total += len(key) + len(value)
		if total > maxMetadataBytes {
			return nil, fmt.Errorf("metadata exceeds %d bytes", maxMetadataBytes)
		}
		if md == nil {
			md = map[string]string{}
		}
		md[key] = value
	}
	return md, nil
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// replaceMetadata makes md the file's complete metadata set.
func replaceMetadata(path string, md map[string]string) error {
	old, err := readMetadata(path)
	if err != nil {
		return err
	}
	for k := range old {
		if _, keep := md[k]; keep {
			continue
		}
		if err := unix.Removexattr(path, xattrPrefix+k); err != nil && !errors.Is(err, unix.ENODATA) {
			return fmt.Errorf("remove metadata %q of %s: %w", k, path, err)
		}
	}
	for k, v := range md {
		if err := unix.Setxattr(path, xattrPrefix+k, []byte(v), 0); err != nil {
			return fmt.Errorf("store metadata %q on %s: %w", k, path, err)
		}
	}
	return nil
}

// readMetadata returns the user.e2b.* attributes of path (not following a
// final symlink); filesystems without xattr support simply have none.
func readMetadata(path string) (map[string]string, error) {
	size, err := unix.Llistxattr(path, nil)
	if err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		return nil, fmt.Errorf("list metadata of %s: %w", path, err)
	}
	if size == 0 {
		return nil, nil
	}
	buf := make([]byte, size)
	n, err := unix.Llistxattr(path, buf)
	if err != nil {
		return nil, fmt.Errorf("list metadata of %s: %w", path, err)
	}
	var md map[string]string
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		key, ok := strings.CutPrefix(name, xattrPrefix)
		if !ok || key == "" {
			continue
		}
		value, err := getXattr(path, name)
		if err != nil {
			return nil, err
		}
		if md == nil {
			md = map[string]string{}
		}
		md[key] = value
	}
	return md, nil
}

func getXattr(path, name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Lgetxattr(path, name, buf)
		if errors.Is(err, unix.ERANGE) {
			buf = make([]byte, len(buf)*4)
			if len(buf) > 1<<20 {
				return "", fmt.Errorf("metadata %s of %s too large", name, path)
			}
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read metadata %s of %s: %w", name, path, err)
		}
		return string(buf[:n]), nil
	}
}
