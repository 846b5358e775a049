package api

import (
	"mime"
	"net/http"
	"strconv"
)

// The request media types the OpenAPI document lists: a JSON route takes
// application/json, files/content takes application/octet-stream, and
// nothing else is read. A request without a Content-Type is taken as the
// route's type, so `curl --data` style clients and a browser's fetch of a
// Blob with no type (which sends none) work.
const (
	mediaJSON  = "application/json"
	mediaBytes = "application/octet-stream"
)

// checkMediaType answers nil when the request's Content-Type is absent or
// names accepted (parameters such as charset aside), else a 415 naming
// what came and what is accepted. POST answers carry Accept-Post with the
// accepted type, the hint RFC 9110 leaves to that field.
func checkMediaType(w http.ResponseWriter, r *http.Request, accepted string) *Problem {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == accepted {
		return nil
	}
	if r.Method == http.MethodPost {
		w.Header().Set("Accept-Post", accepted)
	}
	detail := "the body must be " + accepted + ", not " + strconv.Quote(ct)
	if accepted == mediaBytes {
		// The mistake a generated client makes by default: a string body
		// JSON-encoded, which would be stored with its quotes.
		detail += "; send the file's bytes as they are, with Content-Type: " + mediaBytes
	}
	return newProblem(kindMediaType, detail)
}
