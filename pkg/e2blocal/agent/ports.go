//go:build linux

package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"strconv"
)

// EnvdPort is envd's port; requests without a port header go there too.
const EnvdPort = "49983"

// portProxy forwards requests for any other port to that port on the
// sandbox's own loopback, as E2B does for `<port>-<id>.<domain>` hosts
// (sandbox.getHost(port)): a server started inside the sandbox becomes
// reachable through the runtime's sandbox address. The agent lives in the
// sandbox's network namespace, so this never reaches the host.
func portProxy() http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "127.0.0.1:" + pr.In.Header.Get("E2b-Sandbox-Port")
			pr.Out.Host = pr.In.Host
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, _ error) {
			if r.Context().Err() != nil {
				return
			}
			port, _ := strconv.Atoi(r.Header.Get("E2b-Sandbox-Port"))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_ = json.NewEncoder(w).Encode(map[string]any{
				"message": "The sandbox is running but port is not open",
				"port":    port,
				"code":    http.StatusBadGateway,
			})
		},
	}
}

// validPort reports whether p names a TCP port other than the agent's own.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536 && strconv.Itoa(n) == p
}
