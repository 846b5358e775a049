//go:build linux

package e2blocal

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is E2B's error body. The SDKs branch on the body's code (404 on
// kill/getInfo, 409 on pause), so code always equals the HTTP status.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, apiError{Code: status, Message: fmt.Sprintf(format, args...)})
}

func sandboxNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, "sandbox %q doesn't exist or you don't have access to it", id)
}

// proxyNotFound is the body E2B's edge proxy sends for a sandbox that is
// unknown, dead or not running; the SDKs turn 502 into "not running".
func proxyNotFound(w http.ResponseWriter, id string) {
	writeJSON(w, http.StatusBadGateway, struct {
		SandboxID string `json:"sandboxId"`
		Message   string `json:"message"`
		Code      int    `json:"code"`
	}{id, "The sandbox was not found", http.StatusBadGateway})
}
