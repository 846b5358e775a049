package api

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openAPIDoc is the API's OpenAPI 3.1 description. TestOpenAPIMatchesRoutes
// keeps it true to the route table, and its examples true to the handlers.
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3.1 document, for tools that serve or check
// it elsewhere.
func OpenAPI() []byte { return append([]byte(nil), openAPIDoc...) }

func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request, _ identity) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openAPIDoc)))
	h.Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDoc)
}
