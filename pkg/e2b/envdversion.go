package e2b

import (
	"fmt"
	"strconv"
	"strings"
)

// The client uses envd features only where the sandbox's envd has them, as
// the official SDKs do: a sandbox reports its envd
// version on create and connect, and templates built long ago keep an old
// envd. A sandbox attached without a version counts as current.
var (
	envdMinimum        = envdVersion{0, 1, 0} // older: the template must be rebuilt
	envdRecursiveWatch = envdVersion{0, 1, 4}
	envdMetrics        = envdVersion{0, 1, 5}
	envdDefaultUser    = envdVersion{0, 4, 0} // older: no default user, so calls name "user"
	envdCloseStdin     = envdVersion{0, 5, 2}
	envdOctetUpload    = envdVersion{0, 5, 7} // older: uploads are multipart only
)

// legacyDefaultUser is the user the SDKs name on envd without a default.
const legacyDefaultUser = "user"

// envdVersion is major, minor, patch.
type envdVersion [3]int

// parseEnvdVersion reads "1.2.3", with an optional "v" prefix and
// pre-release or build suffix; ok is false for anything else.
func parseEnvdVersion(s string) (v envdVersion, ok bool) {
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func (v envdVersion) less(w envdVersion) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

func (v envdVersion) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// hasEnvd reports whether the sandbox's envd is v or later; an unknown or
// unreadable version counts as current.
func (s *Sandbox) hasEnvd(v envdVersion) bool {
	got, ok := parseEnvdVersion(s.EnvdVersion)
	return !ok || !got.less(v)
}

// needEnvd fails op with ErrUnsupported, before any request, when the
// sandbox's envd is older than v.
func (s *Sandbox) needEnvd(op string, v envdVersion) error {
	if s.hasEnvd(v) {
		return nil
	}
	return &Error{Op: op, SandboxID: s.ID, kinds: []error{ErrUnsupported},
		Message: fmt.Sprintf("needs envd %s or later; this sandbox runs envd %s (rebuild its template)", v, s.EnvdVersion)}
}

// user is the user a call names: the caller's, or "user" on an envd that
// has no default user.
func (s *Sandbox) user(u string) string {
	if u == "" && !s.hasEnvd(envdDefaultUser) {
		return legacyDefaultUser
	}
	return u
}
