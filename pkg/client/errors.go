package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessionbox/sessionbox/pkg/problem"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// Problem is an error answer of the API (application/problem+json).
type Problem struct {
	// Type is the stable kind of the problem, a URI such as
	// https://sessionbox.dev/problems/not-found.
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	// RetryAfter is how long the service asked to wait before trying
	// again (its Retry-After header), or zero when it did not say.
	RetryAfter time.Duration `json:"-"`
}

func (p *Problem) Error() string {
	if p.Detail != "" {
		return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail)
	}
	return fmt.Sprintf("%d %s", p.Status, p.Title)
}

// Kind is the last segment of Type ("not-found", "limit-reached", …), or ""
// when the problem has no type.
func (p *Problem) Kind() string {
	return p.Type[strings.LastIndex(p.Type, "/")+1:]
}

// kind is the problem's kind in sessionbox's vocabulary: by its type, or,
// for an answer that names none (a gateway's own 429 or 504), by its status.
func (p *Problem) kind() (problem.Kind, bool) {
	if k, ok := problem.ForType(p.Type); ok {
		return k, true
	}
	return problem.ForStatus(p.Status)
}

// Is makes errors.Is(err, session.ErrNotFound) (or any sentinel of
// pkg/problem's kinds) hold for an answer of that kind, as it does for the
// domain's own errors in process.
func (p *Problem) Is(target error) bool {
	k, ok := p.kind()
	return ok && k.Err == target
}

// As makes a Problem also a *session.Error of its kind, with the API's
// detail and Retry-After, so callers read a remote failure as they read a
// local one.
func (p *Problem) As(target any) bool {
	se, ok := target.(**session.Error)
	if !ok {
		return false
	}
	k, ok := p.kind()
	if !ok {
		return false
	}
	*se = &session.Error{Kind: k.Err, Detail: p.Detail, RetryAfter: p.RetryAfter, Err: p}
	return true
}

// IsStatus reports whether err is a Problem of the given HTTP status.
func IsStatus(err error, status int) bool {
	var p *Problem
	return errors.As(err, &p) && p.Status == status
}

// readProblem reads a non-2xx answer as a Problem; an answer that is not
// problem+json (a proxy's page, say) keeps its status and text.
func readProblem(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	p := &Problem{}
	if err := json.Unmarshal(raw, p); err != nil || p.Status == 0 {
		p = &Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: strings.TrimSpace(string(raw))}
	}
	p.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	return p
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// UnreachableError says the API could not be reached at all: nothing
// listens at URL, its name does not resolve, or the connection timed out.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach sessionbox at %s: %s", e.URL, e.Reason())
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Reason says in a few words why the API could not be reached.
func (e *UnreachableError) Reason() string {
	var dns *net.DNSError
	switch {
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(e.Err, &dns) && dns.IsNotFound:
		return "no such host " + dns.Name
	case errors.As(e.Err, &dns):
		return "cannot resolve " + dns.Name + ": " + dns.Err
	case errors.Is(e.Err, context.DeadlineExceeded) || errors.Is(e.Err, syscall.ETIMEDOUT):
		return "timed out connecting"
	case errors.Is(e.Err, syscall.ENETUNREACH) || errors.Is(e.Err, syscall.EHOSTUNREACH):
		return "network unreachable"
	}
	return e.Err.Error()
}

// transportError wraps a failed round trip: one that never connected is an
// *UnreachableError, any other names the request.
func (c *Client) transportError(method, path string, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &UnreachableError{URL: c.baseURL, Err: err}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return &UnreachableError{URL: c.baseURL, Err: err}
	}
	return fmt.Errorf("%s %s: %w", method, path, err)
}
