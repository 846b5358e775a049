package api

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// openapi.json is the source; every API function links this package, so
// the binary carries it gzipped (23 KB instead of 176 KB), which keeps the
// bootstraps under their size budget. TestOpenAPIGzipCurrent fails when
// the two differ.
//go:generate sh -c "gzip -9 -n -c openapi.json > openapi.json.gz"

// openAPIGzip is the API's OpenAPI 3.1 description, gzipped.
// TestOpenAPIMatchesRoutes keeps it true to the route table, and its
// examples true to the handlers.
//
//go:embed openapi.json.gz
var openAPIGzip []byte

// openAPIDoc is the document decompressed, once, for clients that do not
// accept gzip and for OpenAPI.
var openAPIDoc = sync.OnceValue(func() []byte {
	doc, err := gunzip(openAPIGzip)
	if err != nil {
		// The embedded file is checked by a test; a build that fails it
		// is not one to run.
		panic(fmt.Sprintf("api: embedded openapi.json.gz: %v", err))
	}
	return doc
})

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// OpenAPI returns the OpenAPI 3.1 document, for tools that serve or check
// it elsewhere.
func OpenAPI() []byte { return bytes.Clone(openAPIDoc()) }

// openAPI answers the document gzipped to clients that accept it (browsers,
// curl --compressed, Go's transport) and plain to the rest.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request, _ identity) {
	body := openAPIGzip
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Vary", "Accept-Encoding")
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
	} else {
		body = openAPIDoc()
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// acceptsGzip reports whether Accept-Encoding values accept gzip: named
// with a q-value above zero, or not named and "*" accepted (RFC 9110
// §12.5.3).
func acceptsGzip(values []string) bool {
	gzipOK, starOK := false, false
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(item, ";")
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				if zeroQ(params) {
					return false
				}
				gzipOK = true
			case "*":
				starOK = !zeroQ(params)
			}
		}
	}
	return gzipOK || starOK
}

// zeroQ reports whether a coding's parameters set q to 0 ("q=0", "q=0.0").
func zeroQ(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}
