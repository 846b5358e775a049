package api

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestCORS(t *testing.T) {
	t.Parallel()
	preflight := func(path, method string) map[string]string {
		return map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": method,
			"Access-Control-Request-Headers": "authorization, content-type"}
	}
	t.Run("any origin by default", func(t *testing.T) {
		h := newHarness(t)
		resp, body := h.do(call{method: "OPTIONS", path: "/v1/sessions/s1/execute", key: "-", headers: preflight("", "POST")})
		if resp.StatusCode != 204 {
			t.Fatalf("preflight status %d: %s", resp.StatusCode, body)
		}
		hd := resp.Header
		if hd.Get("Access-Control-Allow-Origin") != "*" || hd.Get("Access-Control-Allow-Methods") != "POST" ||
			!strings.Contains(hd.Get("Access-Control-Allow-Headers"), "Authorization") ||
			!strings.Contains(hd.Get("Access-Control-Allow-Headers"), "Idempotency-Key") ||
			hd.Get("Access-Control-Allow-Credentials") != "" || hd.Get("Access-Control-Max-Age") == "" {
			t.Fatalf("preflight headers %v", hd)
		}
		resp, _ = h.do(call{method: "POST", path: "/v1/sessions/s1/runs", body: `{"code":"1"}`, headers: map[string]string{"Origin": "https://app.example"}})
		if resp.StatusCode != 202 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("actual request: %d %v", resp.StatusCode, resp.Header)
		}
		for _, exposed := range []string{"Retry-After", "Location", "X-Request-Id"} {
			if !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), exposed) {
				t.Fatalf("%s not exposed: %q", exposed, resp.Header.Get("Access-Control-Expose-Headers"))
			}
		}
		// Errors must be readable by the browser too.
		resp, _ = h.do(call{method: "GET", path: "/v1/sessions", key: "-", headers: map[string]string{"Origin": "https://app.example"}})
		if resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("401 without CORS headers: %v", resp.Header)
		}
	})
	t.Run("closed list", func(t *testing.T) {
		h := newHarness(t, WithAllowedOrigins("https://app.example"))
		resp, _ := h.do(call{method: "OPTIONS", path: "/v1/sessions/s1/files", key: "-", headers: preflight("", "DELETE")})
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
			resp.Header.Get("Access-Control-Allow-Methods") != "GET, DELETE" || !strings.Contains(resp.Header.Get("Vary"), "Origin") {
			t.Fatalf("allowed origin: %d %v", resp.StatusCode, resp.Header)
		}
		resp, _ = h.do(call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":"1"}`, headers: map[string]string{"Origin": "https://app.example"}})
		if vary := resp.Header.Values("Vary"); !slices.Contains(vary, "Origin") || !slices.Contains(vary, "Accept") {
			t.Fatalf("Vary %v", vary)
		}
		other := map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
		resp, body := h.do(call{method: "OPTIONS", path: "/v1/sessions/s1/execute", key: "-", headers: other})
		checkProblem(t, resp, body, http.StatusForbidden)
		if resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("disallowed origin got CORS headers")
		}
		resp, _ = h.do(call{method: "GET", path: "/healthz", headers: map[string]string{"Origin": "https://evil.example"}})
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("disallowed origin on a simple request: %v", resp.Header)
		}
	})
	t.Run("preflight of an unknown route", func(t *testing.T) {
		h := newHarness(t)
		resp, body := h.do(call{method: "OPTIONS", path: "/v1/nothing", key: "-", headers: preflight("", "GET")})
		checkProblem(t, resp, body, 404)
	})
	t.Run("plain OPTIONS lists methods", func(t *testing.T) {
		h := newHarness(t)
		resp, _ := h.do(call{method: "OPTIONS", path: "/v1/sessions/s1/files/content", key: "-"})
		if resp.StatusCode != 204 || resp.Header.Get("Allow") != "GET, PUT" {
			t.Fatalf("OPTIONS: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
}
