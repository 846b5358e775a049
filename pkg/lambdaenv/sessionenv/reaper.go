package sessionenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// MetricsNamespace is the CloudWatch namespace of sessionbox's metrics.
const MetricsNamespace = lambdaenv.MetricsNamespace

// Reaping is the part of the Manager the reaper uses.
type Reaping interface {
	Reap(ctx context.Context) (session.ReapReport, error)
}

// ReaperHandler runs one reaper tick per scheduled event.
type ReaperHandler struct {
	env     *Env
	reaping Reaping
	metrics io.Writer
}

// Reaper is the reaper function's handler over the Env's Manager, writing
// its metrics line to stdout (CloudWatch Logs extracts them).
func (e *Env) Reaper() *ReaperHandler { return e.ReaperWith(e.Manager, os.Stdout) }

// ReaperWith lets tests observe the metrics line or inject a failing tick.
func (e *Env) ReaperWith(r Reaping, metrics io.Writer) *ReaperHandler {
	return &ReaperHandler{env: e, reaping: r, metrics: metrics}
}

// Tick is what the stack's schedule sends as its input; only the log line
// uses it.
type Tick struct {
	ExecutionID   string `json:"executionId"`
	ScheduledTime string `json:"scheduledTime"`
}

// Invoke is the Lambda entry point. Any payload is a tick: the stack's
// schedule sends a Tick, but a schedule without input, an EventBridge rule's
// envelope or a manual invoke with nothing must reap all the same, not fail
// decoding before the handler runs.
func (h *ReaperHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if err := h.Handle(ctx, payload); err != nil {
		return nil, err
	}
	return []byte("null"), nil
}

// Handle reaps once and reports the counts as embedded metrics. It fails
// when the tick could not run or any session or orphan failed, so the
// function's Errors metric (the ReaperErrors alarm) sees it; the next tick
// retries what failed, so the schedule's own retries add nothing.
func (h *ReaperHandler) Handle(ctx context.Context, payload []byte) error {
	var tick Tick
	_ = json.Unmarshal(payload, &tick) // whatever it is, it is a tick
	rep, err := h.reaping.Reap(ctx)
	errs := rep.Errors
	if err != nil {
		errs++
	}
	merr := lambdaenv.WriteEMF(h.metrics, h.env.Now(), MetricsNamespace, map[string]string{"tenant": h.env.Config.Tenant}, []lambdaenv.Metric{
		{Name: "Paused", Value: float64(rep.Paused), Unit: "Count"},
		{Name: "Killed", Value: float64(rep.Killed), Unit: "Count"},
		{Name: "Recycled", Value: float64(rep.Recycled), Unit: "Count"},
		{Name: "Orphans", Value: float64(rep.Orphans), Unit: "Count"},
		{Name: "Errors", Value: float64(errs), Unit: "Count"},
	})
	if merr != nil {
		h.env.Log.ErrorContext(ctx, "reaper metrics", "error", merr)
	}
	h.env.Log.InfoContext(ctx, "reaper tick", "execution", tick.ExecutionID, "scheduledTime", tick.ScheduledTime,
		"payloadBytes", len(payload), "paused", rep.Paused, "killed", rep.Killed, "recycled", rep.Recycled,
		"orphans", rep.Orphans, "errors", errs)
	switch {
	case err != nil:
		return fmt.Errorf("reaper tick: %w", err)
	case rep.Errors > 0:
		return fmt.Errorf("reaper tick: %d sessions or orphans failed (paused %d, killed %d, orphans %d); see the warnings logged",
			rep.Errors, rep.Paused, rep.Killed, rep.Orphans)
	}
	return nil
}
