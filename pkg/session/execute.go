package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// maxExecTimeout caps a caller's timeout: a Lambda lives at most 15 minutes.
const maxExecTimeout = 15 * time.Minute

// maxCodeBytes caps the code of one execution.
const maxCodeBytes = 1 << 20

// sandboxOp is work on a running sandbox. retryable reports whether, after
// failing with ErrSandboxGone, it may run again on a fresh sandbox: only
// when the failure proves nothing of it took effect.
type sandboxOp func(ctx context.Context, s *Session) (retryable bool, err error)

// withSandbox runs op on the session's sandbox, starting (with opts, when
// not nil) or resuming it first. When the provider says the sandbox is
// gone, it starts a fresh one and, if op allows, runs op there once more;
// restarted reports that the session's sandbox was replaced.
func (m *Manager) withSandbox(ctx context.Context, key Key, opts *StartOptions, op sandboxOp) (restarted bool, err error) {
	return m.onSandbox(ctx, key, opts, true, op)
}

// withExistingSandbox runs op on the sandbox the session has, resuming a
// paused one, but never starts one: a session without a sandbox (unknown,
// stopped, failed, or its sandbox gone) is ErrNotFound. Reads use it, so
// a GET costs no sandbox.
func (m *Manager) withExistingSandbox(ctx context.Context, key Key, op sandboxOp) error {
	_, err := m.onSandbox(ctx, key, nil, false, op)
	return err
}

func (m *Manager) onSandbox(ctx context.Context, key Key, opts *StartOptions, mayStart bool, op sandboxOp) (restarted bool, err error) {
	gone, replaced := "", false
	for attempt := 0; attempt < maxTransitions; attempt++ {
		s, r, err := m.acquire(ctx, key, opts, gone, mayStart)
		if err != nil {
			return restarted, err
		}
		restarted = restarted || r
		s, err = m.touch(ctx, s)
		if errors.Is(err, errRetry) {
			continue
		}
		if errors.Is(err, ErrSandboxGone) && !replaced {
			gone, replaced = s.SandboxID, true
			continue
		}
		if err != nil {
			return restarted, err
		}
		retryable, err := op(ctx, s)
		if errors.Is(err, ErrSandboxGone) && retryable && !replaced {
			m.log.InfoContext(ctx, "sandbox gone, starting a fresh one", "session", key.SessionID, "sandbox", s.SandboxID)
			gone, replaced = s.SandboxID, true
			continue
		}
		return restarted, err
	}
	return restarted, &Error{Kind: ErrConflict, Detail: "the session kept changing under concurrent calls; try again", RetryAfter: time.Second}
}

// Execute runs code in the session's kernel, starting or resuming the
// sandbox first. onEvent, when not nil, gets live output (cut at the output
// limit like the result). When the sandbox turned out to be gone, a fresh
// one runs the code and the result says Restarted; code that may have
// started running is never sent again. Restarted is set whenever this call
// put a fresh sandbox in place of one the session had (gone, stopped by
// Stop or the reaper, past its lifetime): kernel state from earlier calls
// is lost. A session's first sandbox is not a restart.
func (m *Manager) Execute(ctx context.Context, key Key, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	timeout, err := m.execTimeout(req.TimeoutSecs)
	if err != nil {
		return nil, err
	}
	if err := validateExec(req); err != nil {
		return nil, err
	}
	req.TimeoutSecs = int(timeout / time.Second)
	if req.Context != "" {
		// An unknown or gone context starts no sandbox.
		if err := m.checkContext(ctx, key, req.Context); err != nil {
			return nil, err
		}
	}
	var res *ExecResult
	var restored *RestoreInfo
	restarted, err := m.withSandbox(ctx, key, nil, func(ctx context.Context, s *Session) (bool, error) {
		restored = cmpOr(s.Restored, restored)
		if req.Context != "" {
			// The sandbox may have been replaced on the way here.
			if _, err := usableContext(key, s, req.Context); err != nil {
				return false, err
			}
		}
		sink := m.newOutputSink(onEvent)
		sink.begin()
		start := m.clock.Now()
		// The provider enforces the timeout itself; ours is the backstop for
		// a provider that stops answering.
		ectx, cancel := context.WithTimeout(ctx, timeout+m.cfg.CallBackstopSlack)
		defer cancel()
		r, err := m.sandboxes.Execute(ectx, s.SandboxID, req, sink.event)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) {
				err = &Error{Kind: ErrTimeout, Detail: fmt.Sprintf("the sandbox did not answer within %d s of the execution's timeout of %d s", int(m.cfg.CallBackstopSlack/time.Second), int(timeout/time.Second)), Err: err}
			}
			if m.stoppedUnder(ctx, key, err) {
				// Not the provider's failure, and not to be run again on a
				// fresh sandbox: the caller (or another) stopped it.
				return false, &Error{Kind: ErrConflict, Detail: "the session was stopped during this execution; its sandbox and kernel state are gone", Err: err}
			}
			if m.diedUnder(ctx, s.SandboxID, err) {
				return false, sandboxDied(key, "execution", err)
			}
			if req.Context != "" && errors.Is(err, ErrNotFound) {
				return false, contextLost(key, req.Context)
			}
			return !sink.started(), fmt.Errorf("execute in sandbox %s: %w", s.SandboxID, err)
		}
		res = sink.finish(r)
		res.Artifacts = m.artifactsOf(ctx, s, start, res)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	res.Restarted = restarted
	res.Restored = restored
	res.KernelRestarted = restarted || res.KernelLost || kernelDied(res.Error)
	return res, nil
}

// kernelDied reports whether an execution's error says its kernel died:
// E2B's DeadKernelError. A kernel replaced to stop a timeout is reported by
// the provider (KernelLost), since code may raise TimeoutError itself.
func kernelDied(e *ExecError) bool {
	return e != nil && e.Name == "DeadKernelError"
}

// stoppedUnder reports whether an operation's failure (its sandbox gone or
// unreachable) came from the session being stopped meanwhile.
func (m *Manager) stoppedUnder(ctx context.Context, key Key, err error) bool {
	if ctx.Err() != nil || (!errors.Is(err, ErrSandboxGone) && !errors.Is(err, ErrUnavailable)) {
		return false
	}
	dctx, cancel := detach(ctx)
	defer cancel()
	s, gerr := m.store.GetSession(dctx, key)
	return gerr == nil && (s.State == StateStopping || s.State == StateStopped)
}

// Reset restarts the session's kernel: variables go, files stay. It never
// starts a sandbox: an unknown session is ErrNotFound, and one without a
// sandbox (stopped, or its sandbox gone) has nothing to reset, since its
// next sandbox starts with a fresh kernel.
func (m *Manager) Reset(ctx context.Context, key Key) error {
	if err := validateKey(key); err != nil {
		return err
	}
	err := m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
		if err := m.sandboxes.ResetKernel(ctx, s.SandboxID); err != nil {
			return true, fmt.Errorf("reset kernel of sandbox %s: %w", s.SandboxID, err)
		}
		return false, nil
	})
	if errors.Is(err, errNoSandbox) {
		return nil
	}
	return err
}

// execTimeout is the caller's timeout, or the default, bounded.
func (m *Manager) execTimeout(secs int) (time.Duration, error) {
	if secs < 0 || time.Duration(secs)*time.Second > maxExecTimeout {
		return 0, Errorf(ErrInvalid, "timeoutSecs must be between 0 and %d", int(maxExecTimeout/time.Second))
	}
	if secs == 0 {
		return m.cfg.ExecTimeout, nil
	}
	return time.Duration(secs) * time.Second, nil
}

func validateExec(req ExecRequest) error {
	if req.Code == "" {
		return Errorf(ErrInvalid, "code is empty")
	}
	if len(req.Code) > maxCodeBytes {
		return &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("code is larger than %d bytes", maxCodeBytes)}
	}
	if req.Context != "" && !contextRE().MatchString(req.Context) {
		return Errorf(ErrInvalid, "context must match %s", contextRE())
	}
	return validateStringMap("envs", req.Envs, envNameRE())
}
