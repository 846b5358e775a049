package e2b

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// CreateParams describes a new sandbox.
type CreateParams struct {
	// Template is the template ID or alias, "base" when empty.
	Template string
	// Timeout is the sandbox lifetime before E2B kills (or pauses) it;
	// zero leaves E2B's default (300s). Sent as whole seconds, rounded up.
	Timeout time.Duration
	// Metadata is stored with the sandbox and can be used to filter List.
	Metadata map[string]string
	// Envs are environment variables of every process in the sandbox.
	Envs map[string]string
	// AutoPause pauses instead of killing the sandbox when it times out.
	AutoPause bool
	// AutoResume resumes a paused sandbox on incoming traffic.
	AutoResume bool
	// AllowInternetAccess toggles outbound internet; nil keeps E2B's default (allowed).
	AllowInternetAccess *bool
	// AllowPublicTraffic false makes every port but envd's answer only
	// requests carrying the sandbox's traffic access token, which the
	// returned Sandbox sends (E2B's network.allowPublicTraffic); nil keeps
	// E2B's default (public).
	AllowPublicTraffic *bool
	// Secure, when non-nil, creates the sandbox through the v1 endpoint with
	// that value; false yields a sandbox whose envd needs no access token.
	// When nil the v2 endpoint is used (v1 with secure: true on a server
	// without it) and the sandbox is always secured.
	Secure *bool
}

type autoResumeBody struct {
	Enabled bool `json:"enabled"`
}

type createBody struct {
	TemplateID          string            `json:"templateID"`
	Timeout             int64             `json:"timeout,omitempty"`
	AutoPause           bool              `json:"autoPause,omitempty"`
	AutoResume          *autoResumeBody   `json:"autoResume,omitempty"`
	Secure              *bool             `json:"secure,omitempty"`
	AllowInternetAccess *bool             `json:"allow_internet_access,omitempty"`
	Network             *networkBody      `json:"network,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	EnvVars             map[string]string `json:"envVars,omitempty"`
}

// networkBody is E2B's SandboxNetworkConfig.
type networkBody struct {
	AllowPublicTraffic *bool `json:"allowPublicTraffic,omitempty"`
}

// sandboxBody is the API's Sandbox schema (create, connect responses).
type sandboxBody struct {
	TemplateID         string  `json:"templateID"`
	SandboxID          string  `json:"sandboxID"`
	Alias              string  `json:"alias"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// Create starts a new sandbox. Only a 429 is retried (E2B refuses such a
// create before making anything), within RetryPolicy.MaxRateLimitWait and
// ctx; any other failed create may still have created a sandbox. A server
// without the v2 endpoint gets the v1 one (apilevel.go).
func (c *Client) Create(ctx context.Context, p CreateParams) (*Sandbox, error) {
	if c.cfg.Debug {
		return c.attach(sandboxBody{SandboxID: debugSandboxID, EnvdVersion: debugEnvdVersion, TemplateID: p.Template}), nil
	}
	body := createBody{TemplateID: p.Template, Timeout: ceilSeconds(p.Timeout),
		AutoPause: p.AutoPause, Secure: p.Secure, AllowInternetAccess: p.AllowInternetAccess,
		Metadata: p.Metadata, EnvVars: p.Envs}
	if body.TemplateID == "" {
		body.TemplateID = "base"
	}
	if p.AutoResume {
		body.AutoResume = &autoResumeBody{Enabled: true}
	}
	if p.AllowPublicTraffic != nil {
		body.Network = &networkBody{AllowPublicTraffic: p.AllowPublicTraffic}
	}
	var out sandboxBody
	var err error
	if p.Secure != nil {
		if body.Timeout == 0 {
			body.Timeout = ceilSeconds(DefaultSandboxTimeout) // v1 would default to 15s
		}
		err = c.createOn(ctx, "/sandboxes", body, &out)
	} else {
		out, err = c.createSandbox(ctx, body)
	}
	if err != nil {
		return nil, wrapErr("sandboxes.create", "", err)
	}
	if out.SandboxID == "" {
		return nil, &Error{Op: "sandboxes.create", Message: "response has no sandboxID"}
	}
	sb := c.attach(out)
	if err := sb.needEnvd("sandboxes.create", envdMinimum); err != nil {
		// Nothing would work in it; as the SDKs do, do not leave it running.
		if kerr := c.Kill(context.WithoutCancel(ctx), sb.ID); kerr != nil && !errors.Is(kerr, ErrNotFound) {
			return nil, errors.Join(err, kerr)
		}
		return nil, err
	}
	return sb, nil
}

// ConnectParams tunes Connect.
type ConnectParams struct {
	// Timeout resets the sandbox lifetime; zero keeps E2B's default (300s).
	Timeout time.Duration
}

// Connect attaches to an existing sandbox, resuming it when it is paused.
// Sandbox.Resumed reports whether it had to be resumed (HTTP 201). A server
// without the v2 endpoint gets v1's, or the deprecated resume (apilevel.go).
func (c *Client) Connect(ctx context.Context, id string, p ConnectParams) (*Sandbox, error) {
	if c.cfg.Debug {
		return c.attach(sandboxBody{SandboxID: id, EnvdVersion: debugEnvdVersion}), nil
	}
	out, resumed, err := c.connectSandbox(ctx, id, ceilSeconds(p.Timeout))
	if err != nil {
		return nil, wrapErr("sandboxes.connect", id, err)
	}
	if out.SandboxID == "" {
		out.SandboxID = id
	}
	sb := c.attach(out)
	sb.Resumed = resumed
	return sb, nil
}

// SandboxState is the lifecycle state reported by the API.
type SandboxState string

// Sandbox states.
const (
	StateRunning SandboxState = "running"
	StatePaused  SandboxState = "paused"
)

// SandboxInfo describes a sandbox as returned by GetInfo and List.
type SandboxInfo struct {
	SandboxID   string            `json:"sandboxID"`
	TemplateID  string            `json:"templateID"`
	Alias       string            `json:"alias,omitempty"`
	ClientID    string            `json:"clientID,omitempty"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int               `json:"memoryMB"`
	DiskSizeMB  int               `json:"diskSizeMB"`
	State       SandboxState      `json:"state"`
	EnvdVersion string            `json:"envdVersion"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Domain      *string           `json:"domain,omitempty"`
	// EnvdAccessToken is only returned by GetInfo, for secured sandboxes.
	EnvdAccessToken string `json:"envdAccessToken,omitempty"`
	// TrafficAccessToken is only returned by GetInfo, for sandboxes created
	// with AllowPublicTraffic false: Attach needs it to reach their ports.
	TrafficAccessToken  *string `json:"trafficAccessToken,omitempty"`
	AllowInternetAccess *bool   `json:"allowInternetAccess,omitempty"`
	Lifecycle           *struct {
		AutoResume bool   `json:"autoResume"`
		OnTimeout  string `json:"onTimeout"`
	} `json:"lifecycle,omitempty"`
}

// GetInfo returns the details of one sandbox. A missing sandbox yields an
// error matching ErrSandboxNotFound.
func (c *Client) GetInfo(ctx context.Context, id string) (*SandboxInfo, error) {
	var out SandboxInfo
	_, err := c.doAPI(ctx, apiCall{op: "sandboxes.get", method: http.MethodGet,
		path: "/sandboxes/" + url.PathEscape(id), idempotent: true, sandboxID: id}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Kill terminates a sandbox. Killing a sandbox that does not exist (or is
// already gone) returns an error matching ErrSandboxNotFound, so callers
// that only want it gone can ignore that case.
func (c *Client) Kill(ctx context.Context, id string) error {
	if c.cfg.Debug {
		return nil
	}
	_, err := c.doAPI(ctx, apiCall{op: "sandboxes.kill", method: http.MethodDelete,
		path: "/sandboxes/" + url.PathEscape(id), idempotent: true, sandboxID: id}, nil)
	return err
}

// SetTimeout replaces the remaining lifetime of a sandbox with d, counted
// from now (rounded up to whole seconds).
func (c *Client) SetTimeout(ctx context.Context, id string, d time.Duration) error {
	if c.cfg.Debug {
		return nil
	}
	_, err := c.doAPI(ctx, apiCall{op: "sandboxes.setTimeout", method: http.MethodPost,
		path: "/sandboxes/" + url.PathEscape(id) + "/timeout", body: map[string]int64{"timeout": ceilSeconds(d)},
		idempotent: true, sandboxID: id}, nil)
	return err
}

// Pause pauses a running sandbox; Connect resumes it. Pausing a sandbox that
// is already paused (or pausing) returns an error matching ErrConflict;
// a missing one matches ErrSandboxNotFound. Pause is not retried, since a
// repeated pause would report a conflict for a pause that worked.
func (c *Client) Pause(ctx context.Context, id string) error {
	_, err := c.doAPI(ctx, apiCall{op: "sandboxes.pause", method: http.MethodPost,
		path: "/sandboxes/" + url.PathEscape(id) + "/pause", body: struct{}{}, sandboxID: id}, nil)
	return err
}

// Metric is one resource-usage sample of a sandbox.
type Metric struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int       `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	MemCache      int64     `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// MetricsParams selects a time window; zero times leave the bound open.
type MetricsParams struct {
	Start, End time.Time
}

// Metrics returns resource-usage samples of a sandbox.
func (c *Client) Metrics(ctx context.Context, id string, p MetricsParams) ([]Metric, error) {
	if c.cfg.Debug {
		return nil, nil
	}
	q := url.Values{}
	if !p.Start.IsZero() {
		q.Set("start", strconv.FormatInt(p.Start.Unix(), 10))
	}
	if !p.End.IsZero() {
		q.Set("end", strconv.FormatInt(p.End.Unix(), 10))
	}
	var out []Metric
	_, err := c.doAPI(ctx, apiCall{op: "sandboxes.metrics", method: http.MethodGet,
		path: "/sandboxes/" + url.PathEscape(id) + "/metrics", query: q, idempotent: true, sandboxID: id}, &out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// IsNotFound reports whether err means the resource or the sandbox is gone.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
