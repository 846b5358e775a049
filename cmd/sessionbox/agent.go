package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/sessionbox/sessionbox/pkg/buildstamp"
)

// agentName is the dedicated agent's file name; `make build` puts it beside
// sessionbox in bin/.
const agentName = "sessionbox-agent"

// agentUsage describes --agent, the same for serve and runtime.
const agentUsage = "the `PATH` of the executable each sandbox runs as its init: a build of cmd/sessionbox-agent, refused when its build stamp shows other sources than this binary's (default: the " + agentName + " beside this binary when both carry the same build stamp, as make build makes them; else this binary itself)"

// agentChoice is the agent a runtime is given, and why a neighbour was
// passed over ("" when none was, or there was none to consider).
type agentChoice struct {
	path    string // "" for the runtime's own binary
	warning string
}

// chooseAgent resolves --agent for a binary at self whose build stamp is
// stamp and whose toolchain is goVersion. An explicit path is used unless
// it is provably from another build; without one, the agent beside self is
// used only when it is provably from this build, so a stale neighbour never
// runs sandboxes for a rebuilt sessionbox.
func chooseAgent(explicit, self, stamp, goVersion string) (agentChoice, error) {
	if explicit != "" {
		info, err := buildstamp.Read(explicit)
		if err != nil {
			// Not a Go executable, or missing: the runtime's own check
			// names what is wrong with it.
			if _, serr := os.Stat(explicit); serr != nil {
				return agentChoice{}, fmt.Errorf("--agent: %w", serr)
			}
			return agentChoice{path: explicit}, nil
		}
		if stamp != "" && info.Stamp != "" && (info.Stamp != stamp || info.GoVersion != goVersion) {
			return agentChoice{}, fmt.Errorf("--agent %s was built from other sources than %s (build stamps %s/%s and %s/%s); build both together (make build), or leave --agent out",
				explicit, self, info.Stamp, info.GoVersion, stamp, goVersion)
		}
		return agentChoice{path: explicit}, nil
	}
	if stamp == "" {
		// An unstamped build (go run, go test) cannot prove a neighbour.
		return agentChoice{}, nil
	}
	neighbour := filepath.Join(filepath.Dir(self), agentName)
	fi, err := os.Stat(neighbour)
	if err != nil {
		return agentChoice{}, nil
	}
	passOver := func(why string) (agentChoice, error) {
		return agentChoice{warning: fmt.Sprintf("sessionbox: not using %s as the sandboxes' agent (%s); sandboxes run %s itself", neighbour, why, self)}, nil
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return passOver("not an executable file")
	}
	info, err := buildstamp.Read(neighbour)
	switch {
	case err != nil:
		return passOver(err.Error())
	case info.Stamp == "":
		return passOver("it carries no build stamp")
	case info.Stamp != stamp || info.GoVersion != goVersion:
		return passOver(fmt.Sprintf("built from other sources: stamp %s/%s, this binary's %s/%s; rebuild both with make build", info.Stamp, info.GoVersion, stamp, goVersion))
	}
	return agentChoice{path: neighbour}, nil
}

// agentFor is chooseAgent for this process.
func agentFor(explicit string) (agentChoice, error) {
	self, err := os.Executable()
	if err != nil {
		if explicit != "" {
			return agentChoice{path: explicit}, nil
		}
		return agentChoice{}, nil
	}
	return chooseAgent(explicit, self, buildstamp.Stamp, runtime.Version())
}
