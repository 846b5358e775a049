package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

// UploadURLs has the service fetch each URL into destDir of the session's
// sandbox ("" for the working directory). One URL failing fails only that
// URL: the result lists what landed and why the others did not.
func (c *Client) UploadURLs(ctx context.Context, sessionID string, urls []string, destDir string) (*session.URLUploadResult, error) {
	var raw json.RawMessage
	body := wire.UploadURLsRequest{URLs: urls, DestDir: destDir}
	path := c.sessionPath(sessionID, "/files/upload-urls")
	if err := c.doJSON(ctx, http.MethodPost, path, body, &raw); err != nil {
		return nil, err
	}
	// A request that ran long was answered 200 before it ended; a failure
	// after that comes as a Problem in the body, whose status is a number
	// where the result's is a word.
	var probe struct {
		Status json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("POST %s: decode answer: %w", path, err)
	}
	if len(probe.Status) > 0 && probe.Status[0] != '"' {
		p := &Problem{}
		if err := json.Unmarshal(raw, p); err != nil {
			return nil, fmt.Errorf("POST %s: decode problem: %w", path, err)
		}
		return nil, p
	}
	var res session.URLUploadResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("POST %s: decode answer: %w", path, err)
	}
	return &res, nil
}
