package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MetaOnce marks the sandbox of a one-shot execution: it has no session, so
// the orphan sweep leaves it alone while the execution may still run.
const MetaOnce = "once"

// OnceRequest is code to run once in a sandbox of its own.
type OnceRequest struct {
	Code        string
	TimeoutSecs int
	Envs        map[string]string
	// Template is the sandbox's template; the default when empty.
	Template string
}

// ExecuteOnce runs code in a fresh sandbox that no session owns and kills
// the sandbox afterwards, whatever happened: an error, a timeout, the
// caller gone. The sandbox counts against the caller's cap while it lives,
// and the provider's own timeout on it (the execution's timeout and some
// slack) kills it should this process die first. Artifacts are copied out
// before the kill.
func (m *Manager) ExecuteOnce(ctx context.Context, tenant, principal string, req OnceRequest, onEvent func(Event)) (*ExecResult, error) {
	if err := validateName("tenant", tenant); err != nil {
		return nil, err
	}
	if err := validateName("principal", principal); err != nil {
		return nil, err
	}
	timeout, err := m.execTimeout(req.TimeoutSecs)
	if err != nil {
		return nil, err
	}
	exec := ExecRequest{Code: req.Code, TimeoutSecs: int(timeout / time.Second), Envs: req.Envs}
	if err := validateExec(exec); err != nil {
		return nil, err
	}
	if req.Template != "" && !templateRE().MatchString(req.Template) {
		return nil, Errorf(ErrInvalid, "template must match %s", templateRE())
	}
	id, slot, err := m.startOnce(ctx, tenant, principal, req.Template, timeout)
	if err != nil {
		return nil, err
	}
	defer m.endOnce(ctx, tenant, id, slot)
	return m.runOnce(ctx, id, exec, timeout, onEvent)
}

// onceLifetime bounds a one-shot sandbox at the provider: the execution's
// timeout, the backstop past it, and time to copy artifacts out, within
// the provider's cap.
func (m *Manager) onceLifetime(timeout time.Duration) time.Duration {
	return min(timeout+m.cfg.CallBackstopSlack+m.cfg.ProviderTimeoutSlack+time.Minute, m.cfg.MaxSandboxLifetime)
}

// startOnce takes a slot of the caller's cap (one without a session) and
// creates the one-shot sandbox.
func (m *Manager) startOnce(ctx context.Context, tenant, principal, template string, timeout time.Duration) (string, Slot, error) {
	slot := m.newSlot(principal, "")
	if err := m.takeSlot(ctx, tenant, slot); err != nil {
		return "", Slot{}, err
	}
	if template == "" {
		template = m.cfg.DefaultTemplate
	}
	md := map[string]string{MetaTenant: tenant, MetaPrincipal: principal, MetaOnce: "true"}
	if m.cfg.StackID != "" {
		md[MetaStack] = m.cfg.StackID
	}
	info, err := m.createOnKey(ctx, SandboxSpec{Template: template, Timeout: m.onceLifetime(timeout),
		Metadata: md, AllowInternetAccess: m.cfg.AllowInternetAccess})
	if err != nil {
		m.giveBackSlot(ctx, tenant, slot.String())
		return "", Slot{}, fmt.Errorf("start a sandbox for a one-shot execution: %w", err)
	}
	return info.ID, slot, nil
}

// endOnce kills a one-shot sandbox even when the caller has gone, and gives
// its slot back. A failed kill is left to the provider's timeout on the
// sandbox, and its slot to the reaper once that timeout has surely passed.
func (m *Manager) endOnce(ctx context.Context, tenant, id string, slot Slot) {
	dctx, cancel := detach(ctx)
	defer cancel()
	if err := m.sandboxes.Kill(dctx, id); err != nil {
		m.log.WarnContext(ctx, "kill one-shot sandbox; its provider timeout will", "sandbox", id, "err", err)
		return
	}
	m.giveBackSlot(ctx, tenant, slot.String())
}

// runOnce executes on the one-shot sandbox as Execute does on a session's,
// never a second time.
func (m *Manager) runOnce(ctx context.Context, id string, req ExecRequest, timeout time.Duration, onEvent func(Event)) (*ExecResult, error) {
	sink := m.newOutputSink(onEvent)
	sink.begin()
	start := m.clock.Now()
	ectx, cancel := context.WithTimeout(ctx, timeout+m.cfg.CallBackstopSlack)
	defer cancel()
	r, err := m.sandboxes.Execute(ectx, id, req, sink.event)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) {
			err = &Error{Kind: ErrTimeout, Detail: fmt.Sprintf("the sandbox did not answer within %s of the execution's timeout", m.cfg.CallBackstopSlack), Err: err}
		}
		return nil, fmt.Errorf("execute in one-shot sandbox %s: %w", id, err)
	}
	res := sink.finish(r)
	res.Artifacts = m.artifactsOf(ctx, &Session{SandboxID: id}, start, res)
	res.KernelRestarted = res.KernelLost || kernelDied(res.Error)
	return res, nil
}
