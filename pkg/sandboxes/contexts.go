package sandboxes

import (
	"context"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// CreateContext starts an interpreter context in the sandbox.
func (a *E2B) CreateContext(ctx context.Context, id string, req session.ContextRequest) (session.CodeContext, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return session.CodeContext{}, err
	}
	c, err := sb.CreateContext(ctx, e2b.CreateContextOptions{Language: req.Language, Cwd: req.Cwd})
	if err != nil {
		return session.CodeContext{}, domainError("create context", err)
	}
	out := session.CodeContext{ID: c.ID, Language: c.Language, Cwd: c.Cwd}
	if out.Language == "" {
		out.Language = req.Language
	}
	if out.Cwd == "" {
		out.Cwd = req.Cwd
	}
	return out, nil
}

// RestartContext restarts one context's kernel.
func (a *E2B) RestartContext(ctx context.Context, id, contextID string) error {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return err
	}
	return domainError("restart context", sb.RestartContext(ctx, contextID))
}

// RemoveContext shuts one context down.
func (a *E2B) RemoveContext(ctx context.Context, id, contextID string) error {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return err
	}
	return domainError("remove context", sb.RemoveContext(ctx, contextID))
}
