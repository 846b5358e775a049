//go:build linux

package e2blocal

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

func (rt *Runtime) handleTimeout(w http.ResponseWriter, r *http.Request, s *sandbox) {
	var req timeoutRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Timeout == nil {
		writeError(w, http.StatusBadRequest, "timeout is required")
		return
	}
	d, err := rt.seconds(req.Timeout, 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if d == 0 {
		// timeout 0 means "now": the sandbox expires immediately.
		d = time.Nanosecond
	}
	rt.respondLifecycle(w, s, s.setTimeout(d))
}

func (rt *Runtime) handleRefresh(w http.ResponseWriter, r *http.Request, s *sandbox) {
	var req refreshRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Duration != nil && (*req.Duration < 0 || *req.Duration > 3600) {
		writeError(w, http.StatusBadRequest, "duration must be between 0 and 3600 seconds")
		return
	}
	d, _ := seconds(req.Duration, rt.cfg.DefaultV1Timeout)
	rt.respondLifecycle(w, s, s.refresh(d))
}

func (rt *Runtime) handlePause(w http.ResponseWriter, r *http.Request, s *sandbox) {
	var body struct {
		Memory *bool `json:"memory"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	rt.respondLifecycle(w, s, s.pause(r.Context()))
}

func (rt *Runtime) respondLifecycle(w http.ResponseWriter, s *sandbox, err error) {
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, errGone):
		sandboxNotFound(w, s.id)
	case errors.Is(err, errConflict):
		writeError(w, http.StatusConflict, "%v", errors.Unwrap(err))
	default:
		writeError(w, http.StatusInternalServerError, "%v", err)
	}
}

// handleResume is the deprecated resume: 201 when it resumed, 409 when the
// sandbox was already running.
func (rt *Runtime) handleResume(w http.ResponseWriter, r *http.Request, s *sandbox) {
	var req timeoutRequest
	if !decodeBody(w, r, &req) {
		return
	}
	d, err := rt.seconds(req.Timeout, rt.cfg.DefaultV1Timeout)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if st, _ := s.snapshot(); st == stateRunning {
		writeError(w, http.StatusConflict, "sandbox %q is already running", s.id)
		return
	}
	rt.respondConnect(w, s, d)
}

// handleConnect answers 200 for a running sandbox and 201 after resuming a
// paused one; both re-arm the timeout. v1 requires a timeout, v2 defaults it.
func (rt *Runtime) handleConnect(v2 bool) func(http.ResponseWriter, *http.Request, *sandbox) {
	return func(w http.ResponseWriter, r *http.Request, s *sandbox) {
		var req timeoutRequest
		if !decodeBody(w, r, &req) {
			return
		}
		if !v2 && req.Timeout == nil {
			writeError(w, http.StatusBadRequest, "timeout is required")
			return
		}
		d, err := rt.seconds(req.Timeout, rt.cfg.DefaultV2Timeout)
		if err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		rt.respondConnect(w, s, d)
	}
}

func (rt *Runtime) respondConnect(w http.ResponseWriter, s *sandbox, d time.Duration) {
	resumed, err := s.resume(d)
	switch {
	case errors.Is(err, errGone):
		sandboxNotFound(w, s.id)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "resume sandbox: %v", err)
	case resumed:
		writeJSON(w, http.StatusCreated, rt.sandboxBody(s))
	default:
		writeJSON(w, http.StatusOK, rt.sandboxBody(s))
	}
}

// handleMetrics answers the samples taken in [start, end] (unix seconds, as
// E2B's API takes them; both optional), oldest first, after taking a fresh
// one when the newest is older than the sampling interval.
func (rt *Runtime) handleMetrics(w http.ResponseWriter, r *http.Request, s *sandbox) {
	q := r.URL.Query()
	start, ok := unixParam(w, "start", q.Get("start"), 0)
	if !ok {
		return
	}
	end, ok := unixParam(w, "end", q.Get("end"), math.MaxInt64)
	if !ok {
		return
	}
	s.sampleIfStale(rt.cfg.metricsInterval)
	writeJSON(w, http.StatusOK, s.metrics.between(start, end))
}

// unixParam parses an optional unix-seconds query parameter.
func unixParam(w http.ResponseWriter, name, raw string, def int64) (int64, bool) {
	if raw == "" {
		return def, true
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < 0 {
		writeError(w, http.StatusBadRequest, "%s must be a unix timestamp in seconds, got %q", name, raw)
		return 0, false
	}
	return v, true
}

func (rt *Runtime) handleMetricsMany(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("sandbox_ids")
	if raw == "" {
		writeError(w, http.StatusBadRequest, "sandbox_ids is required")
		return
	}
	ids := strings.Split(raw, ",")
	if len(ids) > 100 {
		writeError(w, http.StatusBadRequest, "at most 100 sandbox_ids are allowed")
		return
	}
	out := map[string]metricBody{}
	for _, id := range ids {
		if s := rt.lookup(strings.TrimSpace(id)); s != nil {
			out[s.id] = s.sampleIfStale(rt.cfg.metricsInterval)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sandboxes": out})
}
