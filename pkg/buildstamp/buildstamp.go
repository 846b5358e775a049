// Package buildstamp says which sources a binary was built from, so that
// two binaries meant to work together (sessionbox and the sandboxes' agent,
// cmd/sessionbox-agent) can be checked to come from one build without
// running either.
//
// The Makefile hashes the tree's sources (every non-test file under cmd/
// and pkg/, go.mod, go.sum) and links both binaries with
//
//	-ldflags '-X github.com/sessionbox/sessionbox/pkg/buildstamp.Stamp=<hash>'
//
// A binary reads its own stamp from Stamp; another's comes from the -ldflags
// the go command records in its build info (debug/buildinfo), which it does
// unless the build used -trimpath. A build without the flag (go run, go
// test, a plain go build) is unstamped: nothing can be proven about it.
package buildstamp

import (
	"debug/buildinfo"
	"fmt"
	"strings"
)

// Symbol is the -X name of Stamp.
const Symbol = "github.com/sessionbox/sessionbox/pkg/buildstamp.Stamp"

// Stamp is the content hash of the sources this binary was built from, set
// at link time; "" when unstamped.
var Stamp string

// Info is what a Go executable's build info says about its build.
type Info struct {
	Stamp     string // "" when unstamped
	GoVersion string // the toolchain that built it, e.g. go1.26.8
}

// Read reads the build info of the Go executable at path without running
// it.
func Read(path string) (Info, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return Info{}, fmt.Errorf("read build info of %s: %w", path, err)
	}
	info := Info{GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		if s.Key == "-ldflags" {
			info.Stamp = FromLdflags(s.Value)
		}
	}
	return info, nil
}

// FromLdflags returns the value -X gives Symbol in a go build -ldflags
// string ("" when none does); the last one wins, as in the linker.
func FromLdflags(ldflags string) string {
	fields := strings.Fields(ldflags)
	stamp := ""
	for i := 0; i < len(fields); i++ {
		f := strings.Trim(fields[i], `'"`)
		var def string
		switch {
		case f == "-X" || f == "--X":
			if i+1 == len(fields) {
				continue
			}
			i++
			def = strings.Trim(fields[i], `'"`)
		case strings.HasPrefix(f, "-X="), strings.HasPrefix(f, "--X="):
			def = f[strings.Index(f, "=")+1:]
		default:
			continue
		}
		if v, ok := strings.CutPrefix(def, Symbol+"="); ok {
			stamp = v
		}
	}
	return stamp
}
