package session

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// lazyRegexp compiles expr on first use. When the local runtime has no
// dedicated agent, the service's binary is also each sandbox's agent, which
// never validates a request: compiling every pattern at package init cost
// each such sandbox start ~1.8 ms of CPU, and every CLI command some too.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

var (
	// idRE is the rule of every id a caller names: sessions, contexts, runs.
	idRE          = lazyRegexp(`^[A-Za-z0-9._-]{1,128}$`)
	sessionIDRE   = idRE
	contextRE     = idRE
	templateRE    = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	envNameRE     = lazyRegexp(EnvNamePattern)
	metaKeyRE     = lazyRegexp(MetadataKeyPattern)
	contentTypeRE = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(;\s?[A-Za-z0-9._-]+=[A-Za-z0-9._"-]+)*$`)

	// packageSpecRE is a PEP 508 name, optional extras and optional version
	// specifiers, nothing else: no markers, URLs, paths, options or spaces.
	packageSpecRE = lazyRegexp(`^` + pkgName + `(\[` + pkgName + `(,` + pkgName + `)*\])?(` + pkgVersion + `(,` + pkgVersion + `)*)?$`)
)

const (
	pkgName    = `[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?`
	pkgVersion = `(?:===|==|!=|~=|>=|<=|<|>)[A-Za-z0-9][A-Za-z0-9.*+!_-]*`
	// shellChars are characters a POSIX shell reads specially.
	shellChars = "`$;&|<>(){}[]\\\"'!*?~#"
)

// Limits on what a caller may attach to a session or execution. The
// exported ones are stated in the API's OpenAPI document, whose tests hold
// it to them.
const (
	// MaxMapEntries bounds envs and metadata: at most this many names.
	MaxMapEntries = 50
	// MaxMapValueBytes bounds each env or metadata value.
	MaxMapValueBytes = 4096
	// EnvNamePattern is what an environment variable's name must match.
	EnvNamePattern = `^[A-Za-z_][A-Za-z0-9_]{0,127}$`
	// MetadataKeyPattern is what a metadata key must match.
	MetadataKeyPattern = `^[A-Za-z0-9._:-]{1,64}$`
	maxPathBytes       = 4096
	maxPackageSpec     = 200
	maxNameBytes       = 256
)

// ValidateSessionID accepts [A-Za-z0-9._-]{1,128}, except "." and "..".
func ValidateSessionID(id string) error {
	if !sessionIDRE().MatchString(id) || id == "." || id == ".." {
		return Errorf(ErrInvalid, "session id must be 1 to 128 of A-Z a-z 0-9 . _ - (and not . or ..)")
	}
	return nil
}

// ValidatePackageSpec accepts a package name with optional extras and
// version specifiers, like "pandas", "pandas==2.2.2",
// "requests[socks]>=2.31,<3". Options, URLs, paths, environment markers,
// spaces and shell characters are refused: pip gets names, never
// instructions.
func ValidatePackageSpec(spec string) error {
	if len(spec) > maxPackageSpec || !packageSpecRE().MatchString(spec) {
		return Errorf(ErrInvalid, "package %q is not a plain name with optional [extras] and version specifiers (like pandas==2.2.2); options, URLs, paths, markers and spaces are not allowed", truncateForDetail(spec))
	}
	return nil
}

// CleanPath returns the absolute, cleaned form of a sandbox path; a relative
// path resolves in the working directory (/home/user).
func CleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", Errorf(ErrInvalid, "path is empty")
	case len(p) > maxPathBytes:
		return "", Errorf(ErrInvalid, "path is longer than %d bytes", maxPathBytes)
	case !utf8.ValidString(p):
		return "", Errorf(ErrInvalid, "path is not valid UTF-8")
	case strings.ContainsFunc(p, isControl):
		return "", Errorf(ErrInvalid, "path contains control characters")
	}
	if !path.IsAbs(p) {
		p = path.Join(WorkDir, p)
	}
	return path.Clean(p), nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// validateKey checks a session key. Tenant and principal come from the
// authorizer, but they form store keys (T#tenant#P#principal), so '#' would
// let two of them collide.
func validateKey(k Key) error {
	if err := validateName("tenant", k.Tenant); err != nil {
		return err
	}
	if err := validateName("principal", k.Principal); err != nil {
		return err
	}
	return ValidateSessionID(k.SessionID)
}

func validateName(what, v string) error {
	if v == "" || len(v) > maxNameBytes || strings.ContainsRune(v, '#') || strings.ContainsFunc(v, isControl) || !utf8.ValidString(v) {
		return Errorf(ErrInvalid, "%s must be 1 to %d printable characters without '#'", what, maxNameBytes)
	}
	return nil
}

// validateStringMap checks envs or metadata: names by re, bounded values.
func validateStringMap(what string, m map[string]string, re *regexp.Regexp) error {
	if len(m) > MaxMapEntries {
		return Errorf(ErrInvalid, "%s has more than %d entries", what, MaxMapEntries)
	}
	for k, v := range m {
		if !re.MatchString(k) {
			return Errorf(ErrInvalid, "%s name %q must match %s", what, truncateForDetail(k), re)
		}
		if len(v) > MaxMapValueBytes || strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			return Errorf(ErrInvalid, "%s value of %q must be valid UTF-8 of at most %d bytes without NUL", what, k, MaxMapValueBytes)
		}
	}
	return nil
}

// truncateForDetail keeps echoed input short in error details.
func truncateForDetail(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%s...", cutString(s, 64))
	}
	return s
}
