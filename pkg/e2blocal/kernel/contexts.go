//go:build linux

package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

const maxControlBody = 1 << 20

type contextJSON struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func (c *kctx) json() contextJSON {
	return contextJSON{ID: c.id, Language: c.language, Cwd: c.cwd}
}

type createContextRequest struct {
	Language *string `json:"language"`
	Cwd      *string `json:"cwd"`
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}

// writeValidation answers 422 like the E2B server's body validation.
func writeValidation(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnprocessableEntity)
	_ = json.NewEncoder(w).Encode(map[string]any{"detail": []map[string]string{{"msg": msg, "type": "value_error"}}})
}

// decodeBody reads a JSON body; an empty body is allowed when optional.
func decodeBody(r *http.Request, v any, optional bool, limit int64) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if int64(len(data)) > limit {
		return errors.New("body too large")
	}
	if optional && len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("invalid JSON body: %w", err)
	}
	return nil
}

func unsupportedLanguage(lang string) string {
	return fmt.Sprintf("Language %q is not supported by this interpreter; supported: python, javascript, typescript, bash", lang)
}

func (s *Server) handleCreateContext(w http.ResponseWriter, r *http.Request) {
	var req createContextRequest
	if err := decodeBody(r, &req, true, maxControlBody); err != nil {
		writeValidation(w, err.Error())
		return
	}
	lang := langPython
	if req.Language != nil {
		lang = normalizeLanguage(*req.Language)
	}
	if !supportedLanguage(lang) {
		writeText(w, http.StatusBadRequest, unsupportedLanguage(lang))
		return
	}
	cwd := s.cfg.Workdir
	if req.Cwd != nil && *req.Cwd != "" {
		cwd = *req.Cwd
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(s.cfg.Workdir, cwd)
		}
	}
	if err := checkCwd(cwd); err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	c := newContext(s, lang, cwd)
	// E2B's kernels run as root, so a context in /root works there; here
	// kernels run as the sandbox's user, except in a cwd that user cannot
	// enter, where the kernel keeps the server's identity (root inside).
	c.asServer = s.cfg.Credential != nil && !searchable(cwd, s.cfg.Credential)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeText(w, http.StatusServiceUnavailable, errClosed.Error())
		return
	}
	if max := s.maxContexts(); len(s.contexts) >= max {
		s.mu.Unlock()
		writeText(w, http.StatusTooManyRequests, fmt.Sprintf(
			"this sandbox has %d contexts, the most it may have (MaxContexts); delete one (DELETE /contexts/{id}) before creating another", max))
		return
	}
	s.addLocked(c)
	s.mu.Unlock()
	if !c.tryAcquire() {
		writeText(w, http.StatusInternalServerError, "new context is busy")
		return
	}
	_, err := c.ensure(r.Context())
	c.release()
	if err != nil {
		s.remove(c.id)
		c.destroy()
		writeText(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, c.json())
}

func (s *Server) handleListContexts(w http.ResponseWriter, r *http.Request) {
	all := s.list()
	out := make([]contextJSON, 0, len(all))
	for _, c := range all {
		out = append(out, c.json())
	}
	writeJSON(w, out)
}

func (s *Server) handleDeleteContext(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c := s.remove(id)
	if c == nil {
		writeText(w, http.StatusNotFound, fmt.Sprintf("Context %s not found", id))
		return
	}
	c.destroy()
	writeJSON(w, nil)
}

func (s *Server) handleRestartContext(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c := s.lookup(id)
	if c == nil {
		writeText(w, http.StatusNotFound, fmt.Sprintf("Context %s not found", id))
		return
	}
	if err := c.restart(r.Context()); err != nil {
		if errors.Is(err, errContextGone) {
			writeText(w, http.StatusNotFound, fmt.Sprintf("Context %s not found", id))
			return
		}
		writeText(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, nil)
}

// searchable reports whether the user of cred may enter dir, from the
// permission bits of dir alone (its parents are the server's to reach).
func searchable(dir string, cred *syscall.Credential) bool {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false
	}
	switch {
	case cred.Uid == 0:
		return true
	case st.Uid == cred.Uid:
		return st.Mode&0o100 != 0
	case st.Gid == cred.Gid || slices.Contains(cred.Groups, st.Gid):
		return st.Mode&0o010 != 0
	}
	return st.Mode&0o001 != 0
}

// checkCwd says why a kernel cannot start in dir, naming it: it is missing,
// not a directory, or not searchable by the kernel's user (E2B's kernels run
// as root; here they run as the sandbox's user, so /root may refuse them).
func checkCwd(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cwd %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("cwd %s cannot be used: %v", dir, errors.Unwrap(err))
	case !st.IsDir():
		return fmt.Errorf("cwd %s is not a directory", dir)
	}
	if err := unix.Access(dir, unix.X_OK); err != nil {
		return fmt.Errorf("cwd %s is not accessible to the kernel's user: %v", dir, err)
	}
	return nil
}

func (s *Server) maxContexts() int {
	if s.cfg.MaxContexts > 0 {
		return s.cfg.MaxContexts
	}
	return DefaultMaxContexts
}
