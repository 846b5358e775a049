//go:build linux

package envd

import "net/http"

// exposedHeaders are the response headers browser clients (connect-web and
// the SDK's file calls) need to read.
const exposedHeaders = "Connect-Protocol-Version, Connect-Timeout-Ms, Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin, " +
	"Content-Encoding, Content-Disposition, Content-Length, Content-Type"

// withCORS makes envd usable from a browser the way E2B's permissive CORS
// does: any origin, any request header, preflights answered directly.
func withCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", exposedHeaders)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				h.Set("Access-Control-Allow-Headers", req)
			}
			h.Set("Access-Control-Max-Age", "7200")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
