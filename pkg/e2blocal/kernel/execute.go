//go:build linux

package kernel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

const maxExecuteBody = 16 << 20

type executeRequest struct {
	Code      *string           `json:"code"`
	ContextID *string           `json:"context_id"`
	Language  *string           `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
	// Timeout (seconds) is a sessionbox extension: the cell is interrupted when it elapses.
	Timeout *float64 `json:"timeout"`
}

// execution is one validated /execute request.
type execution struct {
	code    string
	env     []byte
	timeout time.Duration
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// encodeEnv renders env_vars as the kernel's "k\0v\0" block.
func encodeEnv(vars map[string]string) ([]byte, error) {
	var b []byte
	for k, v := range vars {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("invalid environment variable %q", k)
		}
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, v...)
		b = append(b, 0)
	}
	return b, nil
}

func (s *Server) parseExecute(w http.ResponseWriter, r *http.Request) (*kctx, *execution, bool) {
	var req executeRequest
	if err := decodeBody(r, &req, false, maxExecuteBody); err != nil {
		writeValidation(w, err.Error())
		return nil, nil, false
	}
	if req.Code == nil {
		writeValidation(w, "field required: code")
		return nil, nil, false
	}
	env, err := encodeEnv(req.EnvVars)
	if err != nil {
		writeValidation(w, err.Error())
		return nil, nil, false
	}
	ex := &execution{code: *req.Code, env: env, timeout: s.cfg.ExecTimeout}
	if t := req.Timeout; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 1e9 {
			writeValidation(w, "timeout must be a non-negative number of seconds")
			return nil, nil, false
		}
		if *t > 0 {
			ex.timeout = time.Duration(*t * float64(time.Second))
		}
	}
	id, lang := deref(req.ContextID), deref(req.Language)
	if id != "" && lang != "" {
		writeText(w, http.StatusBadRequest, "Only one of context_id or language can be provided")
		return nil, nil, false
	}
	if id != "" {
		c := s.lookup(id)
		if c == nil {
			writeText(w, http.StatusNotFound, fmt.Sprintf("Context %s not found", id))
			return nil, nil, false
		}
		return c, ex, true
	}
	l := normalizeLanguage(lang)
	if !supportedLanguage(l) {
		writeText(w, http.StatusBadRequest, unsupportedLanguage(l))
		return nil, nil, false
	}
	c, err := s.defaultContext(l)
	if err != nil {
		writeText(w, http.StatusServiceUnavailable, err.Error())
		return nil, nil, false
	}
	return c, ex, true
}

func (s *Server) handleExecute(w http.ResponseWriter, r *http.Request) {
	c, ex, ok := s.parseExecute(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	es := newExecStream(w, s.cfg.MaxOutputBytes, s.resultBudget(), ex.timeout)
	ctx := r.Context()
	if !c.tryAcquire() {
		es.flush()
		if !s.waitSlot(ctx, c, es) {
			return
		}
	}
	defer c.release()
	p, err := c.ensure(ctx)
	if err != nil {
		if ctx.Err() == nil {
			name := "KernelStartError"
			if errors.Is(err, errContextGone) {
				name = "ContextNotFound"
			}
			es.errorLine(name, err.Error(), "")
			es.end()
		}
		return
	}
	es.kernelReplaced = c.takeLost()
	s.run(ctx, c, p, es, ex)
}

// waitSlot waits for the context's execution slot, sending keepalives meanwhile.
func (s *Server) waitSlot(ctx context.Context, c *kctx, es *execStream) bool {
	ka := time.NewTicker(s.tune.keepalive)
	defer ka.Stop()
	for {
		select {
		case c.sem <- struct{}{}:
			return true
		case <-ka.C:
			es.keepalive()
			es.flush()
			if es.gone {
				return false
			}
		case <-ctx.Done():
			return false
		}
	}
}
