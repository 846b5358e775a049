//go:build linux

package envd

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// resolvePath turns a client path into an absolute, clean one: empty means
// the home directory, `~` and `~/x` expand to it, relative paths resolve
// against it. `~other` is refused because there are no other homes.
func (s *Server) resolvePath(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("path contains a NUL byte")
	}
	if p == "" {
		return s.cfg.Home, nil
	}
	if p[0] == '~' {
		if len(p) > 1 && p[1] != '/' {
			return "", fmt.Errorf("cannot expand user-specific home dir in path '%s'", p)
		}
		p = filepath.Join(s.cfg.Home, p[1:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.cfg.Home, p)
	}
	return filepath.Clean(p), nil
}
