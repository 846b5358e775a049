package api

import "net/http"

// route is one entry of the API: the mux registers exactly these, and the
// OpenAPI test checks the document describes exactly these.
type route struct {
	method string
	path   string // a net/http ServeMux path pattern
	public bool   // served without authentication
	handle func(s *Server, w http.ResponseWriter, r *http.Request, id identity)
}

func (s *Server) routeTable() []route {
	return []route{
		{method: http.MethodGet, path: "/healthz", public: true, handle: (*Server).healthz},
		{method: http.MethodGet, path: "/v1/openapi.json", public: true, handle: (*Server).openAPI},

		{method: http.MethodGet, path: "/v1/sessions", handle: (*Server).listSessions},
		{method: http.MethodPost, path: "/v1/sessions/{id}/sandbox/start", handle: (*Server).startSandbox},
		{method: http.MethodPost, path: "/v1/sessions/{id}/sandbox/stop", handle: (*Server).stopSandbox},
		{method: http.MethodGet, path: "/v1/sessions/{id}/sandbox", handle: (*Server).sandboxStatus},

		{method: http.MethodPost, path: "/v1/sessions/{id}/execute", handle: (*Server).execute},
		{method: http.MethodPost, path: "/v1/sessions/{id}/reset", handle: (*Server).reset},
		{method: http.MethodPost, path: "/v1/sessions/{id}/install", handle: (*Server).install},

		{method: http.MethodGet, path: "/v1/sessions/{id}/files", handle: (*Server).listFiles},
		{method: http.MethodDelete, path: "/v1/sessions/{id}/files", handle: (*Server).deleteFile},
		{method: http.MethodGet, path: "/v1/sessions/{id}/files/content", handle: (*Server).readFile},
		{method: http.MethodPut, path: "/v1/sessions/{id}/files/content", handle: (*Server).writeFile},
		{method: http.MethodPost, path: "/v1/sessions/{id}/files/upload-url", handle: (*Server).uploadURL},
		{method: http.MethodPost, path: "/v1/sessions/{id}/files/import", handle: (*Server).importFile},
		{method: http.MethodPost, path: "/v1/sessions/{id}/files/download-url", handle: (*Server).downloadURL},

		{method: http.MethodPost, path: "/v1/sessions/{id}/runs", handle: (*Server).submitRun},
		{method: http.MethodGet, path: "/v1/runs/{runId}", handle: (*Server).getRun},
	}
}
