package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

const (
	defaultListDir = "/home/user"
	maxListDepth   = 10
)

// Reads answered from a checkpointed workspace say so in these headers.
const (
	headerFileSource   = "X-Sessionbox-Source"
	headerCheckpointAt = "X-Sessionbox-Checkpoint-At"
)

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, id identity) {
	key, q, dir, ok := s.sessionFile(w, r, id, defaultListDir)
	if !ok {
		return
	}
	depth, p := intParam(q, "depth", 1, 1, maxListDepth)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	entries, err := s.mgr.ListFiles(r.Context(), key, dir, depth)
	if session.IsNoSandbox(err) {
		s.listSavedFiles(w, r, key, dir, depth)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if entries == nil {
		entries = []session.FileEntry{}
	}
	writeJSON(w, http.StatusOK, wire.FileList{Entries: entries})
}

// listSavedFiles answers a listing of a session without a sandbox from its
// checkpointed workspace.
func (s *Server) listSavedFiles(w http.ResponseWriter, r *http.Request, key session.Key, dir string, depth int) {
	saved, err := s.mgr.ListSavedFiles(r.Context(), key, dir, depth)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	at := saved.CheckpointAt.UTC()
	markSaved(w.Header(), at)
	writeJSON(w, http.StatusOK, wire.FileList{Entries: saved.Entries, Source: "workspace", CheckpointAt: &at})
}

func markSaved(h http.Header, at time.Time) {
	h.Set(headerFileSource, "workspace")
	h.Set(headerCheckpointAt, at.UTC().Format(time.RFC3339Nano))
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, id identity) {
	key, _, target, ok := s.sessionFile(w, r, id, "")
	if !ok {
		return
	}
	if err := s.mgr.DeleteFile(r.Context(), key, target); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// contentType guesses a file's type from its extension only: sniffing
// content a sandbox produced is not something to trust.
func contentType(p string) string {
	if ct := mime.TypeByExtension(path.Ext(p)); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request, id identity) {
	key, _, target, ok := s.sessionFile(w, r, id, "")
	if !ok {
		return
	}
	body, entry, err := s.mgr.ReadFile(r.Context(), key, target)
	if session.IsNoSandbox(err) {
		var saved *session.SavedFile
		body, saved, err = s.mgr.ReadSavedFile(r.Context(), key, target)
		if err == nil {
			entry = saved.Entry
			markSaved(w.Header(), saved.CheckpointAt)
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer body.Close()
	h := w.Header()
	h.Set("Content-Type", contentType(target))
	// The bytes come from user code; never let a browser run them in the
	// API's origin.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Cache-Control", "no-store")
	if entry.Type == "file" && entry.Size >= 0 {
		h.Set("Content-Length", strconv.FormatInt(entry.Size, 10))
	}
	if !entry.ModifiedAt.IsZero() {
		h.Set("Last-Modified", entry.ModifiedAt.UTC().Format(http.TimeFormat))
	}
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, body); err != nil && r.Context().Err() == nil {
		// The status is out; all that is left is to cut the response short
		// so the client sees a truncated body rather than a complete one.
		s.log.WarnContext(r.Context(), "file stream broke", "requestId", requestID(r.Context()), "error", err.Error())
		panic(http.ErrAbortHandler)
	}
}

// limitedBody is a request body that refuses more than limit bytes and
// remembers that it did, so the refusal is reported as 413 however the
// Manager wraps the read error.
type limitedBody struct {
	r        io.Reader
	exceeded bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		b.exceeded = true
	}
	return n, err
}

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request, id identity) {
	key, _, target, ok := s.sessionFile(w, r, id, "")
	if !ok {
		return
	}
	if p := checkMediaType(w, r, mediaBytes); p != nil {
		writeProblem(w, r, p)
		return
	}
	if r.ContentLength > s.maxInlineFile {
		writeProblem(w, r, s.tooLargeInline())
		return
	}
	body := &limitedBody{r: http.MaxBytesReader(w, r.Body, s.maxInlineFile)}
	entry, err := s.mgr.WriteFile(r.Context(), key, target, body)
	if body.exceeded {
		writeProblem(w, r, s.tooLargeInline())
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entry)
}

func (s *Server) tooLargeInline() *Problem {
	return newProblem(kindTooLarge, "inline files are limited to "+strconv.FormatInt(s.maxInlineFile, 10)+
		" bytes; use files/upload-url and files/import for larger ones (files/download-url to read them)")
}
