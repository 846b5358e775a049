package sessionenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/bus"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// Running is the part of the Manager the runs function uses.
type Running interface {
	ProcessRun(ctx context.Context, ev session.RunRequested) (*session.Run, error)
}

// eventKeyPrefix marks idempotency keys taken from an event's id.
const eventKeyPrefix = "event:"

// RunsHandler carries out "Run Requested" events.
type RunsHandler struct {
	env *Env
	run Running
}

// Runs is the runs function's handler over the Env's Manager.
func (e *Env) Runs() *RunsHandler { return e.RunsWith(e.Manager) }

// RunsWith lets tests inject a failing worker.
func (e *Env) RunsWith(r Running) *RunsHandler { return &RunsHandler{env: e, run: r} }

// Handle runs the requested code once however often the event arrives
// (ProcessRun is idempotent by run id, or by idempotency key, which is the
// event's id when the event names neither; it stores the result and
// publishes "Run Completed"). The function fails, naming the reason, when the run
// could not be carried out: EventBridge invokes it asynchronously, so
// Lambda retries it and then sends it to the on-failure destination (the
// stack's dead-letter queue) with that message. Code that raised is a
// failed run, not a failed function. An event naming another tenant, or an
// invalid principal or session, is refused before anything is recorded.
func (h *RunsHandler) Handle(ctx context.Context, ev events.CloudWatchEvent) error {
	if ev.DetailType != bus.DetailRunRequested {
		return fmt.Errorf("event %s: detail-type %q is not %q", ev.ID, ev.DetailType, bus.DetailRunRequested)
	}
	var req session.RunRequested
	if err := json.Unmarshal(ev.Detail, &req); err != nil {
		return fmt.Errorf("event %s: detail is not a run request: %w", ev.ID, err)
	}
	if req.RunID == "" && req.IdempotencyKey == "" && ev.ID != "" {
		// A pipeline's own event may name neither. EventBridge's and
		// Lambda's retries redeliver it with the same id, so the id keys
		// the run: a redelivery finds the first run instead of a second.
		req.IdempotencyKey = eventKeyPrefix + ev.ID
	}
	sum := sha256.Sum256([]byte(req.Code))
	// runId is logged once, on the outcome line: the event may name none.
	log := h.env.Log.With("event", ev.ID, "session", req.SessionID, "principal", req.Principal,
		"codeBytes", len(req.Code), "codeSha256", hex.EncodeToString(sum[:8]))
	r, err := h.run.ProcessRun(ctx, req)
	if err == nil {
		err = ended(r)
	}
	if r == nil && (errors.Is(err, session.ErrForbidden) || errors.Is(err, session.ErrInvalid)) {
		// Refused before any record or sandbox exists. Failing still sends
		// it, after Lambda's two bounded retries, to the dead-letter queue
		// with this reason: an event for another tenant on this bus is worth
		// someone's look, and the DLQ alarm brings it to them.
		log.ErrorContext(ctx, "run refused", "runId", runID(r, req), "eventTenant", req.Tenant, "reason", err)
		return fmt.Errorf("event %s (run %s) refused: %w", ev.ID, runID(r, req), err)
	}
	if err != nil {
		log.ErrorContext(ctx, "run not carried out", "runId", runID(r, req), "error", err)
		return fmt.Errorf("event %s (run %s, session %s): %w", ev.ID, runID(r, req), req.SessionID, err)
	}
	log.InfoContext(ctx, "run processed", "runId", r.ID, "status", r.Status, "resultKey", r.ResultKey)
	return nil
}

// ended turns a run that another delivery already failed, without any
// execution result (the sandbox or store failed, not the code), into an
// error, so every delivery of it reaches the dead-letter path rather than
// a retry reading as success.
func ended(r *session.Run) error {
	if r != nil && r.Status == session.RunFailed && r.Result == nil && r.ResultKey == "" {
		return errors.New("run failed: " + r.Error)
	}
	return nil
}

func runID(r *session.Run, req session.RunRequested) string {
	if r != nil {
		return r.ID
	}
	if req.RunID != "" {
		return req.RunID
	}
	return "(none)"
}
