package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

// validateUploadURLs checks what only the JSON shows; the Manager judges the URLs
// (400 naming each bad one, 413 past the count limit) and destDir.
func validateUploadURLs(b *wire.UploadURLsRequest) *Problem {
	if b.URLs == nil {
		return newProblem(kindInvalid, `"urls" is required: a list of http or https URLs`)
	}
	return nil
}

// defaultURLUploadTimeout is the write deadline when the Manager does not
// say its own request limit.
const defaultURLUploadTimeout = 14 * time.Minute

func (s *Server) uploadURLs(w http.ResponseWriter, r *http.Request, id identity) {
	if !negotiate(w, r, "files/upload-urls") {
		return
	}
	var b wire.UploadURLsRequest
	key, ok := s.sessionBody(w, r, id, &b, true, func() *Problem { return validateUploadURLs(&b) })
	if !ok {
		return
	}
	logAttrs(r.Context(), slog.Int("urlCount", len(b.URLs)))
	d := defaultURLUploadTimeout
	if c, ok := s.mgr.(interface{ Config() session.Config }); ok && c.Config().URLUploads.RequestTimeout > 0 {
		d = c.Config().URLUploads.RequestTimeout
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + responseSlack))
	s.longJSON(w, r, func(onEvent func(session.Event)) (any, error) {
		return s.mgr.UploadURLs(r.Context(), key, session.URLUploadRequest{URLs: b.URLs, DestDir: b.DestDir,
			OnStarted: func() { onEvent(session.Event{Started: true}) }})
	})
}
