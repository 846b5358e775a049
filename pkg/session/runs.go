package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// RunRequest asks for an asynchronous execution.
type RunRequest struct {
	Code        string
	TimeoutSecs int
	// IdempotencyKey makes a repeated request return the first run.
	IdempotencyKey string
}

var (
	runIDRE          = idRE
	idempotencyKeyRE = lazyRegexp(`^[\x21-\x7e]{1,255}$`)
)

// Events carry at most 256 KB (EventBridge's limit): run code travels in
// RunRequested, so it is held well under that, and RunCompleted carries the
// result only when small (readers fetch the run otherwise).
const (
	maxRunCodeBytes       = 128 << 10
	maxEventResultBytes   = 64 << 10
	runRecordOverheadByte = 8 << 10 // the run's other attributes
	maxRunErrorBytes      = 4 << 10
	maxShrunkResults      = 20
)

// runStaleGrace is how long past its timeout a running run may go before
// another delivery declares its worker dead.
const runStaleGrace = 2 * time.Minute

// RunID is the id of the run a principal requests with an idempotency key:
// the same for every repeat, different across principals and tenants.
func RunID(tenant, principal, idempotencyKey string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + principal + "\x00" + idempotencyKey))
	return "run_" + hex.EncodeToString(sum[:16])
}

func newRunID() string { return "run_" + randomID(16) }

// SubmitRun stores a queued run and publishes RunRequested for the runs
// worker. A request repeating an idempotency key returns the first run
// (queued again on the bus if it never got going); the same key for other
// code or another session is ErrConflict.
func (m *Manager) SubmitRun(ctx context.Context, key Key, req RunRequest) (*Run, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	if err := validateRunRequest(req); err != nil {
		return nil, err
	}
	if m.bus == nil {
		return nil, Errorf(ErrUnavailable, "runs are not configured")
	}
	now := m.clock.Now()
	r := &Run{ID: newRunID(), Key: key, Status: RunQueued, Code: req.Code, TimeoutSecs: req.TimeoutSecs,
		IdempotencyKey: req.IdempotencyKey, CreatedAt: now, ExpiresAt: now.Add(m.cfg.RunRetention)}
	if req.IdempotencyKey != "" {
		r.ID = RunID(key.Tenant, key.Principal, req.IdempotencyKey)
	}
	err := m.store.CreateRun(ctx, r)
	if errors.Is(err, ErrConflict) && req.IdempotencyKey != "" {
		return m.repeatRun(ctx, key, req, r.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("store run: %w", err)
	}
	if err := m.bus.PublishRunRequested(ctx, runRequested(r)); err != nil {
		if req.IdempotencyKey == "" {
			// Nobody can queue it again: record why it never ran.
			if ferr := m.finishRun(ctx, r, nil, "could not be queued: "+publicReason(err)); ferr != nil {
				m.log.WarnContext(ctx, "record unqueued run", "run", r.ID, "err", ferr)
			}
		}
		return nil, fmt.Errorf("queue run %s: %w", r.ID, err)
	}
	return r, nil
}

// repeatRun answers a request whose idempotency key has a run already.
func (m *Manager) repeatRun(ctx context.Context, key Key, req RunRequest, id string) (*Run, error) {
	r, err := m.store.GetRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	if r.SessionID != key.SessionID || r.Code != req.Code || r.TimeoutSecs != req.TimeoutSecs {
		return nil, Errorf(ErrConflict, "idempotency key was used for a different run request")
	}
	if m.runStale(r, m.clock.Now()) {
		r.Status, r.Error = RunFailed, runStaleReason // as GetRun shows it
	}
	if r.Status == RunQueued {
		// The first request may have failed to publish; a second delivery
		// is harmless, the worker runs a run once.
		if err := m.bus.PublishRunRequested(ctx, runRequested(r)); err != nil {
			return nil, fmt.Errorf("queue run %s: %w", r.ID, err)
		}
	}
	return r, nil
}

func runRequested(r *Run) RunRequested {
	return RunRequested{Tenant: r.Tenant, Principal: r.Principal, SessionID: r.SessionID, Code: r.Code,
		RunID: r.ID, IdempotencyKey: r.IdempotencyKey, TimeoutSecs: r.TimeoutSecs}
}

// GetRun returns one of the principal's runs; another principal's run, or
// one past its retention, is ErrNotFound.
func (m *Manager) GetRun(ctx context.Context, tenant, principal, runID string) (*Run, error) {
	if err := validateName("tenant", tenant); err != nil {
		return nil, err
	}
	if err := validateName("principal", principal); err != nil {
		return nil, err
	}
	if !runIDRE().MatchString(runID) {
		return nil, Errorf(ErrInvalid, "run id must be 1 to 128 of A-Z a-z 0-9 . _ -")
	}
	r, err := m.store.GetRun(ctx, runID)
	if errors.Is(err, ErrNotFound) {
		return nil, Errorf(ErrNotFound, "no run %s", runID)
	} else if err != nil {
		return nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	now := m.clock.Now()
	expired := !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
	if r.Tenant != tenant || r.Principal != principal || expired {
		return nil, Errorf(ErrNotFound, "no run %s", runID)
	}
	if m.runStale(r, now) {
		// Its worker died; the next delivery records that, if one comes.
		r.Status, r.Error = RunFailed, runStaleReason
	}
	return r, nil
}

// runStaleReason is what a run whose worker vanished failed with.
const runStaleReason = "the worker running it stopped before it finished"

// runStale reports whether r is running long past its timeout: whoever
// ran it died (a Lambda killed at its deadline, a lost instance).
func (m *Manager) runStale(r *Run, now time.Time) bool {
	return r.Status == RunRunning && now.After(r.StartedAt.Add(m.runTimeout(r)+runStaleGrace))
}

func validateRunRequest(req RunRequest) error {
	if err := validateExec(ExecRequest{Code: req.Code}); err != nil {
		return err
	}
	// The code travels JSON-encoded, where <, > and & take six bytes each
	// and control characters two to six: the encoded length is what counts.
	if n := jsonSize(req.Code) - 2; n > maxRunCodeBytes {
		return &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf(
			"a run's code is limited to %d bytes as JSON text (it travels in an event; <, > and & count six bytes each, newlines and tabs two); this code is %d",
			maxRunCodeBytes, n)}
	}
	if req.TimeoutSecs < 0 || time.Duration(req.TimeoutSecs)*time.Second > maxExecTimeout {
		return Errorf(ErrInvalid, "timeoutSecs must be between 0 and %d", int(maxExecTimeout/time.Second))
	}
	if req.IdempotencyKey != "" && !idempotencyKeyRE().MatchString(req.IdempotencyKey) {
		return Errorf(ErrInvalid, "idempotency key must be 1 to 255 printable ASCII characters without spaces")
	}
	return nil
}

// ProcessRun is the runs worker: it claims the run named by the event
// (creating the record for events that did not come through SubmitRun),
// executes it once however often the event is delivered, stores the result
// (in Blobs when too large for the record) and publishes RunCompleted.
// Code that raised is a failed run, not an error. An error is returned when
// the run could not be carried out (bad event, sandbox or store trouble);
// the caller should dead-letter the event with it.
//
// A repeated delivery never executes the code again. For a finished run it
// returns the run and no error: it ran once. For a run another delivery is
// still carrying out it returns ErrConflict with a RetryAfter, so the event
// is retried later (and dead-lettered if the run never finishes) rather
// than reported done. A run found running long past its timeout is
// recorded failed (its worker died) and that is returned as an error.
func (m *Manager) ProcessRun(ctx context.Context, ev RunRequested) (*Run, error) {
	key := Key{Tenant: ev.Tenant, Principal: ev.Principal, SessionID: ev.SessionID}
	if err := validateKey(key); err != nil {
		return nil, fmt.Errorf("run event: %w", err)
	}
	// Anyone allowed to put events on the bus could name any tenant: a run
	// for another one would spend this deployment's E2B account and write
	// that tenant's records into this table.
	if key.Tenant != m.cfg.Tenant {
		return nil, Errorf(ErrForbidden, "run event: tenant %q is not this deployment's tenant %q", truncateForDetail(key.Tenant), m.cfg.Tenant)
	}
	req := RunRequest{Code: ev.Code, TimeoutSecs: ev.TimeoutSecs, IdempotencyKey: ev.IdempotencyKey}
	if err := validateRunRequest(req); err != nil {
		return nil, fmt.Errorf("run event: %w", err)
	}
	if ev.RunID != "" && !runIDRE().MatchString(ev.RunID) {
		return nil, Errorf(ErrInvalid, "run event: runId must be 1 to 128 of A-Z a-z 0-9 . _ -")
	}
	r, mine, err := m.claimRun(ctx, key, req, ev.RunID)
	if err != nil || !mine {
		return r, err
	}
	res, err := m.Execute(ctx, key, ExecRequest{Code: r.Code, TimeoutSecs: r.TimeoutSecs}, nil)
	if err != nil {
		if ferr := m.finishRun(ctx, r, nil, publicReason(err)); ferr != nil {
			m.log.WarnContext(ctx, "record failed run", "run", r.ID, "err", ferr)
		}
		return r, fmt.Errorf("run %s: %w", r.ID, err)
	}
	if ferr := m.finishRun(ctx, r, res, ""); ferr != nil {
		return r, ferr
	}
	return r, nil
}

// claimRun makes the run ours to execute: a new record created running, or
// a queued one moved to running, conditionally. mine is false when another
// delivery has it (running or done); a running one whose worker is long
// past its timeout is declared failed instead, never executed twice.
func (m *Manager) claimRun(ctx context.Context, key Key, req RunRequest, id string) (r *Run, mine bool, err error) {
	switch {
	case id != "":
	case req.IdempotencyKey != "":
		id = RunID(key.Tenant, key.Principal, req.IdempotencyKey)
	default:
		id = newRunID()
	}
	for attempt := 0; attempt < maxTransitions; attempt++ {
		now := m.clock.Now()
		r, err := m.store.GetRun(ctx, id)
		if errors.Is(err, ErrNotFound) {
			r = &Run{ID: id, Key: key, Status: RunRunning, Code: req.Code, TimeoutSecs: req.TimeoutSecs,
				IdempotencyKey: req.IdempotencyKey, CreatedAt: now, StartedAt: now, ExpiresAt: now.Add(m.cfg.RunRetention)}
			if err := m.store.CreateRun(ctx, r); errors.Is(err, ErrConflict) {
				continue
			} else if err != nil {
				return nil, false, fmt.Errorf("create run %s: %w", id, err)
			}
			return r, true, nil
		} else if err != nil {
			return nil, false, fmt.Errorf("read run %s: %w", id, err)
		}
		if r.Key != key {
			return nil, false, Errorf(ErrConflict, "run %s belongs to another session", id)
		}
		switch {
		case r.Status == RunQueued:
			r.Status, r.StartedAt = RunRunning, now
			if err := m.store.UpdateRun(ctx, r); errors.Is(err, ErrConflict) {
				continue
			} else if err != nil {
				return nil, false, fmt.Errorf("claim run %s: %w", id, err)
			}
			return r, true, nil
		case m.runStale(r, now):
			if err := m.finishRun(ctx, r, nil, runStaleReason); errors.Is(err, ErrConflict) {
				continue
			} else if err != nil {
				return nil, false, err
			}
			return r, false, &Error{Kind: ErrTimeout, Detail: fmt.Sprintf("run %s failed: %s", id, runStaleReason)}
		case r.Status == RunRunning:
			retry := r.StartedAt.Add(m.runTimeout(r) + runStaleGrace).Sub(now)
			return r, false, &Error{Kind: ErrConflict, RetryAfter: max(retry, time.Second), Detail: fmt.Sprintf(
				"run %s is being carried out by another delivery since %s; not run again, try later",
				id, r.StartedAt.UTC().Format(time.RFC3339))}
		default:
			return r, false, nil // finished: it ran once
		}
	}
	return nil, false, Errorf(ErrConflict, "run %s kept changing under concurrent deliveries", id)
}

func (m *Manager) runTimeout(r *Run) time.Duration {
	if r.TimeoutSecs > 0 {
		return time.Duration(r.TimeoutSecs) * time.Second
	}
	return m.cfg.ExecTimeout
}

// publicReason is what a run's record says of the failure err: a domain
// error's detail, never the internal chain (sandbox ids, object keys, queue
// addresses), which goes to the log instead.
func publicReason(err error) string {
	var se *Error
	if errors.As(err, &se) && se.Detail != "" {
		return se.Detail
	}
	return "an internal error occurred; quote the run id when reporting it"
}

// finishRun records the outcome of r and publishes RunCompleted. res nil
// means the run failed with reason. A result too large for the record goes
// to Blobs (or, without Blobs, is cut down); a record the store still
// refuses as too large is stored failed with a short reason, and that is
// returned as ErrTooLarge.
func (m *Manager) finishRun(ctx context.Context, r *Run, res *ExecResult, reason string) error {
	dctx, cancel := detach(ctx)
	defer cancel()
	now := m.clock.Now()
	r.FinishedAt = now
	r.Status, r.Error = RunFailed, cutString(reason, maxRunErrorBytes)
	if res != nil && res.Success {
		r.Status = RunSucceeded
	}
	if res != nil && res.Error != nil {
		r.Error = cutString(res.Error.Name+": "+res.Error.Value, maxRunErrorBytes)
	}
	var lost error
	if res != nil {
		if lost = m.placeResult(dctx, r, res); lost != nil {
			// Left running, the run would read so until judged stale: it
			// is recorded failed now, and the error still goes back for
			// the dead-letter queue. The reason shown to clients stays
			// free of the storage error's internals.
			r.Status, r.Result, r.ResultKey = RunFailed, nil, ""
			r.Error = "its result could not be saved; run it again"
		}
	}
	var tooLarge error
	err := m.store.UpdateRun(dctx, r)
	if errors.Is(err, ErrTooLarge) {
		// Left running, the run would never end: record it failed without
		// what did not fit.
		tooLarge = &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("run %s: its outcome is too large to record", r.ID), Err: err}
		r.Status, r.Result, r.Error = RunFailed, nil, "its outcome was too large to record"
		err = m.store.UpdateRun(dctx, r)
	}
	if err != nil {
		return fmt.Errorf("record run %s: %w", r.ID, err)
	}
	if m.bus != nil {
		ev := RunCompleted{RunID: r.ID, Tenant: r.Tenant, Principal: r.Principal, SessionID: r.SessionID,
			Status: r.Status, ResultKey: r.ResultKey}
		if r.Result != nil && jsonSize(r.Result) <= maxEventResultBytes {
			ev.Result = r.Result
		}
		if !r.StartedAt.IsZero() {
			ev.DurationMs = now.Sub(r.StartedAt).Milliseconds()
		}
		if err := m.bus.PublishRunCompleted(dctx, ev); err != nil {
			return fmt.Errorf("publish completion of run %s: %w", r.ID, err)
		}
	}
	if lost != nil {
		return lost
	}
	return tooLarge
}

// placeResult keeps a small result in the run; a large one goes to Blobs and
// the run names it.
func (m *Manager) placeResult(ctx context.Context, r *Run, res *ExecResult) error {
	body, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode result of run %s: %w", r.ID, err)
	}
	// The record holds the code, the error text and the result together.
	budget := max(m.cfg.MaxInlineRunResultBytes-len(r.Code)-len(r.Error)-runRecordOverheadByte, 0)
	if len(body) <= budget {
		r.Result = res
		return nil
	}
	if m.blobs == nil {
		r.Result = shrinkResult(res, budget/4)
		return nil
	}
	key := "runs/" + r.ID + "/result.json"
	if err := m.blobs.Put(ctx, key, bytes.NewReader(body), int64(len(body)), "application/json"); err != nil {
		return fmt.Errorf("store result of run %s: %w", r.ID, err)
	}
	r.ResultKey = key
	return nil
}

// jsonSize is v's encoded length; what cannot be encoded counts as huge.
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return math.MaxInt
	}
	return len(b)
}

// shrinkResult keeps what fits a record when there is nowhere else for a
// large result: the streams cut to limit each, rich outputs as text only.
func shrinkResult(res *ExecResult, limit int) *ExecResult {
	out := *res
	out.Stdout, out.Stderr = cutString(res.Stdout, limit), cutString(res.Stderr, limit)
	out.Results = nil
	for _, x := range res.Results[:min(len(res.Results), maxShrunkResults)] {
		out.Results = append(out.Results, Result{Text: cutString(x.Text, 1024), IsMainResult: x.IsMainResult})
	}
	if out.Error != nil {
		e := *out.Error
		e.Traceback = cutString(strings.Clone(e.Traceback), limit)
		out.Error = &e
	}
	out.Artifacts = nil
	out.Truncated = true
	return &out
}

// runInterruptedReason is what a run cut off by the service's own end
// (local mode's serve killed) failed with.
const runInterruptedReason = "the service stopped while the run was running; it was not run again (submit it again)"

// FailInterruptedRun ends, failed with the reason, the run of ev that a
// worker had taken up when the service died: its code may have had effects,
// so it is not run twice. A run still queued (the worker died before
// claiming it) is run now; a finished one is left alone.
func (m *Manager) FailInterruptedRun(ctx context.Context, ev RunRequested) error {
	for range maxTransitions {
		r, err := m.store.GetRun(ctx, ev.RunID)
		if errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read run %s: %w", ev.RunID, err)
		}
		switch r.Status {
		case RunQueued:
			_, err := m.ProcessRun(ctx, ev)
			return err
		case RunRunning:
			if err := m.finishRun(ctx, r, nil, runInterruptedReason); errors.Is(err, ErrConflict) {
				continue
			} else if err != nil {
				return err
			}
		}
		return nil
	}
	return Errorf(ErrConflict, "run %s kept changing", ev.RunID)
}
