package api

import "net/http"

// route is one entry of the API: the mux registers exactly these, and the
// OpenAPI test checks the document describes exactly these.
type route struct {
	method string
	path   string // a net/http ServeMux path pattern
	public bool   // served without authentication
	// grows marks routes that may start a sandbox or store an upload:
	// refused with 507 while the storage check fails.
	grows  bool
	handle func(s *Server, w http.ResponseWriter, r *http.Request, id identity)
}

func (s *Server) routeTable() []route {
	return []route{
		{method: http.MethodGet, path: "/healthz", public: true, handle: (*Server).healthz},
		{method: http.MethodGet, path: "/v1/openapi.json", public: true, handle: (*Server).openAPI},

		{method: http.MethodGet, path: "/v1/sessions", handle: (*Server).listSessions},
		{method: http.MethodPost, path: "/v1/sessions/{id}/sandbox/start", grows: true, handle: (*Server).startSandbox},
		{method: http.MethodPost, path: "/v1/sessions/{id}/sandbox/stop", handle: (*Server).stopSandbox},
		{method: http.MethodGet, path: "/v1/sessions/{id}/sandbox", handle: (*Server).sandboxStatus},
		{method: http.MethodGet, path: "/v1/sessions/{id}/sandbox/metrics", handle: (*Server).sandboxMetrics},
		{method: http.MethodPost, path: "/v1/sessions/{id}/checkpoint", handle: (*Server).checkpoint},
		{method: http.MethodDelete, path: "/v1/sessions/{id}", handle: (*Server).deleteSession},

		{method: http.MethodPost, path: "/v1/sessions/{id}/execute", grows: true, handle: (*Server).execute},
		{method: http.MethodPost, path: "/v1/sessions/{id}/execute/stream", grows: true, handle: (*Server).executeStream},
		{method: http.MethodPost, path: "/v1/sessions/{id}/reset", handle: (*Server).reset},
		{method: http.MethodPost, path: "/v1/sessions/{id}/install", grows: true, handle: (*Server).install},
		{method: http.MethodPost, path: "/v1/sessions/{id}/commands", grows: true, handle: (*Server).runCommand},
		{method: http.MethodGet, path: "/v1/sessions/{id}/commands", handle: (*Server).listCommands},
		{method: http.MethodGet, path: "/v1/sessions/{id}/commands/{commandId}", handle: (*Server).getCommand},
		{method: http.MethodGet, path: "/v1/sessions/{id}/commands/{commandId}/output", handle: (*Server).readCommandOutput},
		{method: http.MethodPost, path: "/v1/sessions/{id}/commands/{commandId}/kill", handle: (*Server).killCommand},
		{method: http.MethodPost, path: "/v1/sessions/{id}/install/stream", grows: true, handle: (*Server).installStream},

		{method: http.MethodPost, path: "/v1/sessions/{id}/contexts", grows: true, handle: (*Server).createContext},
		{method: http.MethodGet, path: "/v1/sessions/{id}/contexts", handle: (*Server).listContexts},
		{method: http.MethodDelete, path: "/v1/sessions/{id}/contexts/{contextId}", handle: (*Server).deleteContext},
		{method: http.MethodPost, path: "/v1/sessions/{id}/contexts/{contextId}/reset", handle: (*Server).resetContext},

		{method: http.MethodGet, path: "/v1/sessions/{id}/files", handle: (*Server).listFiles},
		{method: http.MethodDelete, path: "/v1/sessions/{id}/files", handle: (*Server).deleteFile},
		{method: http.MethodGet, path: "/v1/sessions/{id}/files/content", handle: (*Server).readFile},
		{method: http.MethodPut, path: "/v1/sessions/{id}/files/content", grows: true, handle: (*Server).writeFile},
		{method: http.MethodPost, path: "/v1/sessions/{id}/files/upload-url", grows: true, handle: (*Server).uploadURL},
		{method: http.MethodPost, path: "/v1/sessions/{id}/files/import", grows: true, handle: (*Server).importFile},
		{method: http.MethodPost, path: "/v1/sessions/{id}/files/download-url", handle: (*Server).downloadURL},
		{method: http.MethodPost, path: "/v1/sessions/{id}/files/upload-urls", grows: true, handle: (*Server).uploadURLs},

		{method: http.MethodPost, path: "/v1/sessions/{id}/runs", grows: true, handle: (*Server).submitRun},
		{method: http.MethodPost, path: "/v1/execute", grows: true, handle: (*Server).executeOnce},
		{method: http.MethodPost, path: "/v1/execute/stream", grows: true, handle: (*Server).executeOnceStream},
		{method: http.MethodGet, path: "/v1/runs/{runId}", handle: (*Server).getRun},

		{method: http.MethodPost, path: "/v1/mcp", grows: true, handle: (*Server).mcp},
	}
}
