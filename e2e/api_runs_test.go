package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// runView is GET /v1/runs/{runId} as a client reads it.
type runView struct {
	RunID           string      `json:"runId"`
	SessionID       string      `json:"sessionId"`
	Status          string      `json:"status"`
	Result          *execResult `json:"result"`
	ResultURL       string      `json:"resultUrl"`
	ResultExpiresAt *time.Time  `json:"resultExpiresAt"`
}

// runToEnd submits code as a run and polls it until it finishes.
func (s *stack) runToEnd(key, sid, code string) runView {
	s.t.Helper()
	var accepted struct {
		RunID string `json:"runId"`
	}
	s.json(key, "POST", "/v1/sessions/"+sid+"/runs", map[string]any{"code": code}, &accepted)
	var run runView
	testwait.Until(s.t, 2*time.Minute, func() error {
		s.json(key, "GET", "/v1/runs/"+accepted.RunID, nil, &run)
		if run.Status != "succeeded" && run.Status != "failed" {
			return fmt.Errorf("run %s still %s", run.RunID, run.Status)
		}
		return nil
	})
	return run
}

// TestEndToEndLargeRunResult runs code whose result is too large for the
// run's record: the run shows a presigned URL instead of the result, and
// the URL serves the whole result, while a small result stays inline.
func TestEndToEndLargeRunResult(t *testing.T) {
	// The record's budget for a result is this less the code and 8 KB of
	// other attributes: about 8 KB here.
	s := newStackWith(t, 0, session.Config{MaxInlineRunResultBytes: 16 << 10})
	const sid = "large-run"

	small := s.runToEnd(s.alice, sid, "6 * 7")
	if small.Status != "succeeded" || small.Result == nil || small.Result.text() != "42" || small.ResultURL != "" {
		t.Fatalf("small run %+v", small)
	}

	const n = 40000
	large := s.runToEnd(s.alice, sid, "print('x' * 40000)")
	if large.Status != "succeeded" || large.Result != nil || large.ResultURL == "" || large.ResultExpiresAt == nil {
		t.Fatalf("large run %+v", large)
	}
	if left := time.Until(*large.ResultExpiresAt); left <= 0 || left > 15*time.Minute+time.Minute {
		t.Fatalf("resultExpiresAt %s is not within the transfer TTL", large.ResultExpiresAt)
	}
	// The URL is presigned: it works without the API key.
	resp, err := http.Get(large.ResultURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET resultUrl: %d %v %.200s", resp.StatusCode, err, body)
	}
	var res execResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("result is not an execution result: %v: %.200s", err, body)
	}
	if !res.Success || res.Stdout != strings.Repeat("x", n)+"\n" {
		t.Fatalf("downloaded result: success %v, stdout of %d bytes", res.Success, len(res.Stdout))
	}

	rresp, rbody := s.req(s.bob, "GET", "/v1/runs/"+large.RunID, nil)
	s.problem(http.StatusNotFound, rresp, rbody)
}
