package session

import (
	"context"
	"fmt"
)

// RunResultURL presigns a download of a run's result when the result was
// too large for the run's record and went to blob storage (Run.ResultKey).
// The run must be the caller's, as for GetRun; a run whose result is kept
// inline, or that has none yet, has nothing to download: ErrNotFound.
func (m *Manager) RunResultURL(ctx context.Context, tenant, principal, runID string) (*DownloadTicket, error) {
	r, err := m.GetRun(ctx, tenant, principal, runID)
	if err != nil {
		return nil, err
	}
	if r.ResultKey == "" {
		return nil, Errorf(ErrNotFound, "run %s has no stored result to download", runID)
	}
	if m.blobs == nil {
		return nil, Errorf(ErrUnavailable, "file transfers are not configured")
	}
	get, err := m.blobs.PresignGet(ctx, r.ResultKey, m.cfg.TransferTTL)
	if err != nil {
		return nil, fmt.Errorf("presign result of run %s: %w", runID, err)
	}
	// The size would cost a request to blob storage; clients read it from
	// the download itself.
	return &DownloadTicket{URL: get.URL, ExpiresAt: get.ExpiresAt, SizeBytes: -1}, nil
}
