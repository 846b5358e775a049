//go:build !linux

package e2blocal

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
)

// Runtime is the local E2B runtime. Elsewhere than on Linux none can start:
// sandboxes are bubblewrap process trees in Linux namespaces and cgroups.
type Runtime struct{}

// Start reports that the local runtime needs Linux.
func Start(context.Context, Config) (*Runtime, error) {
	return nil, fmt.Errorf("e2blocal: the local sandbox runtime needs Linux (sandboxes are bubblewrap process trees); this is %s/%s", runtime.GOOS, runtime.GOARCH)
}

// RunAgentIfRequested returns at once: no runtime here starts agents.
func RunAgentIfRequested() {}

// InternetAccess reports that no sandbox can reach the internet here.
func (rt *Runtime) InternetAccess() error {
	return fmt.Errorf("e2blocal: no local runtime on %s", runtime.GOOS)
}

// APIURL is empty: no runtime serves here.
func (rt *Runtime) APIURL() string { return "" }

// SandboxURL is empty: no runtime serves here.
func (rt *Runtime) SandboxURL() string { return "" }

// Transport is next: no runtime serves here.
func (rt *Runtime) Transport(next http.RoundTripper) http.RoundTripper { return next }

// Close does nothing.
func (rt *Runtime) Close() error { return nil }
