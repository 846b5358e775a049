package e2b

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// E2B's API grew its create and connect endpoints in three steps, and a
// self-hosted deployment may be any of them:
//
//	v2:     POST /v2/sandboxes, POST /v2/sandboxes/{id}/connect (SDKs >= 2.5x)
//	v1:     POST /sandboxes (secure opt-in), POST /sandboxes/{id}/connect
//	resume: POST /sandboxes, POST /sandboxes/{id}/resume (deprecated; 409
//	        when the sandbox runs, which then only gets its timeout set)
//
// The client starts with v2 and steps down when an endpoint answers 404 or
// 405, remembering per Client (one per process) where the server stands. A
// 404 also means "no such sandbox" or "no such template", so a step down is
// remembered only once the older endpoint answered something other than
// 404/405, and a success on v2 pins v2: after that a 404 is what it says.
const (
	levelUnknown int32 = iota
	levelV2
	levelV1
	levelResume
)

// apiLevels is what the client learned about the server's endpoints.
type apiLevels struct {
	create  atomic.Int32
	connect atomic.Int32
}

// APILevels reports which create and connect endpoints the client has
// settled on: "v2", "v1", "resume" (connect only) or "" while unknown.
func (c *Client) APILevels() (create, connect string) {
	return levelName(c.levels.create.Load()), levelName(c.levels.connect.Load())
}

func levelName(l int32) string {
	switch l {
	case levelV2:
		return "v2"
	case levelV1:
		return "v1"
	case levelResume:
		return "resume"
	}
	return ""
}

// routeMissing reports whether err is the answer of a server that lacks
// the endpoint (or, for a 404, lacks the addressed thing).
func routeMissing(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.StatusCode == http.StatusNotFound || e.StatusCode == http.StatusMethodNotAllowed)
}

// createSandbox posts body to the newest create endpoint the server has.
func (c *Client) createSandbox(ctx context.Context, body createBody) (sandboxBody, error) {
	var out sandboxBody
	level := c.levels.create.Load()
	if level != levelV1 {
		err := c.createOn(ctx, "/v2/sandboxes", body, &out)
		if err == nil {
			c.levels.create.Store(levelV2)
			// E2B added both v2 endpoints in one release.
			c.levels.connect.CompareAndSwap(levelUnknown, levelV2)
			return out, nil
		}
		if level == levelV2 || !routeMissing(err) {
			return out, err
		}
	}
	// v1 creates unsecured sandboxes unless asked, and would give them 15 s.
	secure := true
	body.Secure = &secure
	if body.Timeout == 0 {
		body.Timeout = ceilSeconds(DefaultSandboxTimeout)
	}
	err := c.createOn(ctx, "/sandboxes", body, &out)
	if err == nil || !routeMissing(err) {
		c.levels.create.Store(levelV1)
	}
	return out, err
}

// createOn creates through path. Only a 429 is retried: E2B refuses a
// create it rate limits or that would exceed the team's concurrent
// sandboxes before making anything, so a repeat cannot make two.
func (c *Client) createOn(ctx context.Context, path string, body createBody, out *sandboxBody) error {
	return c.withRateLimitRetry(ctx, func(ctx context.Context) error {
		_, err := c.doAPI(ctx, apiCall{op: "sandboxes.create", method: http.MethodPost, path: path, body: body}, out)
		return err
	})
}

// connectSandbox connects through the newest endpoint the server has and
// reports whether the sandbox had to be resumed.
func (c *Client) connectSandbox(ctx context.Context, id string, timeout int64) (sandboxBody, bool, error) {
	known := c.levels.connect.Load()
	if known == levelUnknown || known == levelV2 {
		out, resumed, err := c.connectOn(ctx, "/v2/sandboxes/"+url.PathEscape(id)+"/connect", id, timeout)
		if err == nil {
			c.levels.connect.Store(levelV2)
			return out, resumed, nil
		}
		if known == levelV2 || !routeMissing(err) {
			return out, resumed, err
		}
	}
	if known != levelResume {
		out, resumed, err := c.connectOn(ctx, "/sandboxes/"+url.PathEscape(id)+"/connect", id, timeout)
		if err == nil || !routeMissing(err) {
			c.levels.connect.Store(levelV1)
			return out, resumed, err
		}
		if known == levelV1 {
			return out, resumed, err // v1 answered before: the sandbox is gone
		}
	}
	out, resumed, err := c.resumeSandbox(ctx, id, timeout)
	if err == nil {
		c.levels.connect.Store(levelResume)
	}
	return out, resumed, err
}

func (c *Client) connectOn(ctx context.Context, path, id string, timeout int64) (sandboxBody, bool, error) {
	body := map[string]int64{}
	if timeout > 0 {
		body["timeout"] = timeout
	}
	var out sandboxBody
	res, err := c.doAPI(ctx, apiCall{op: "sandboxes.connect", method: http.MethodPost, path: path, body: body,
		idempotent: true, sandboxID: id}, &out)
	return out, res.status == http.StatusCreated, err
}

// resumeSandbox is connect on the oldest API: resume a paused sandbox, or,
// when it runs (409), set its timeout and read its details.
func (c *Client) resumeSandbox(ctx context.Context, id string, timeout int64) (sandboxBody, bool, error) {
	if timeout == 0 {
		timeout = ceilSeconds(DefaultSandboxTimeout) // resume would default to 15 s
	}
	var out sandboxBody
	_, err := c.doAPI(ctx, apiCall{op: "sandboxes.connect", method: http.MethodPost,
		path: "/sandboxes/" + url.PathEscape(id) + "/resume", body: map[string]int64{"timeout": timeout},
		sandboxID: id}, &out)
	if !errors.Is(err, ErrConflict) {
		return out, err == nil, err
	}
	if err := c.SetTimeout(ctx, id, time.Duration(timeout)*time.Second); err != nil {
		return out, false, err
	}
	info, err := c.GetInfo(ctx, id)
	if err != nil {
		return out, false, err
	}
	out = sandboxBody{TemplateID: info.TemplateID, SandboxID: info.SandboxID, Alias: info.Alias,
		EnvdVersion: info.EnvdVersion, EnvdAccessToken: info.EnvdAccessToken, Domain: info.Domain}
	return out, false, nil
}
