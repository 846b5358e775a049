package api

import (
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

// cleanBodyPath cleans a sandbox path given in a JSON body.
func cleanBodyPath(ps *problems, p string) string {
	if p == "" {
		ps.check(false, `"path" is required`)
		return ""
	}
	clean, err := session.CleanPath(p)
	if err != nil {
		ps.add(err)
	}
	return clean
}

func (s *Server) uploadURL(w http.ResponseWriter, r *http.Request, id identity) {
	var b wire.UploadURLRequest
	var target string
	key, ok := s.sessionBody(w, r, id, &b, true, func() *Problem {
		var ps problems
		target = cleanBodyPath(&ps, b.Path)
		ps.check(b.SizeBytes != nil, `"sizeBytes" is required`)
		return ps.problem()
	})
	if !ok {
		return
	}
	t, err := s.mgr.UploadURL(r.Context(), key, target, *b.SizeBytes, b.ContentType)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	headers := t.Request.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	writeJSON(w, http.StatusOK, wire.UploadTicket{UploadURL: t.Request.URL, Method: t.Request.Method, Headers: headers,
		ExpiresAt: timePtr(t.Request.ExpiresAt), TransferID: t.TransferID})
}

func (s *Server) importFile(w http.ResponseWriter, r *http.Request, id identity) {
	var b wire.ImportRequest
	key, ok := s.sessionBody(w, r, id, &b, true, func() *Problem {
		if b.TransferID == "" {
			return newProblem(kindInvalid, `"transferId" is required: the id files/upload-url returned`)
		}
		return nil
	})
	if !ok {
		return
	}
	entry, err := s.mgr.Import(r.Context(), key, b.TransferID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entry)
}

func (s *Server) downloadURL(w http.ResponseWriter, r *http.Request, id identity) {
	var b wire.DownloadURLRequest
	var target string
	key, ok := s.sessionBody(w, r, id, &b, true, func() *Problem {
		var ps problems
		target = cleanBodyPath(&ps, b.Path)
		return ps.problem()
	})
	if !ok {
		return
	}
	t, err := s.mgr.DownloadURL(r.Context(), key, target)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.DownloadTicket{DownloadURL: t.URL, ExpiresAt: timePtr(t.ExpiresAt), SizeBytes: t.SizeBytes})
}
