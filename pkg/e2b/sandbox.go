package e2b

import (
	"context"
	"time"
)

// Sandbox is a handle on one running sandbox. It is cheap; its methods and
// its Files, Commands and Pty accessors are safe for concurrent use.
type Sandbox struct {
	// ID is the sandbox ID.
	ID string
	// TemplateID is the template the sandbox was created from (empty after Attach).
	TemplateID string
	// EnvdVersion is the version of envd in the sandbox.
	EnvdVersion string
	// Domain is the domain serving this sandbox (the configured one when the API gave none).
	Domain string
	// Resumed is true when Connect had to resume a paused sandbox.
	Resumed bool

	accessToken  string
	trafficToken string
	client       *Client
	envd         *sandboxConn
	interp       *sandboxConn
	files        *Filesystem
	commands     *Commands
}

// AttachParams carries what is needed to reach a sandbox without an API call.
type AttachParams struct {
	// AccessToken is the sandbox's envdAccessToken (empty for unsecured sandboxes).
	AccessToken string
	// TrafficAccessToken is sent as E2B-Traffic-Access-Token when set.
	TrafficAccessToken string
	// Domain overrides the configured domain for this sandbox.
	Domain string
	// EnvdVersion is informational.
	EnvdVersion string
}

// Attach returns a handle on sandbox id without calling the API, for callers
// that stored the sandbox's access token. Use Connect when you do not have it.
func (c *Client) Attach(id string, p AttachParams) *Sandbox {
	b := sandboxBody{SandboxID: id, EnvdAccessToken: p.AccessToken, EnvdVersion: p.EnvdVersion}
	if p.Domain != "" {
		b.Domain = &p.Domain
	}
	if p.TrafficAccessToken != "" {
		b.TrafficAccessToken = &p.TrafficAccessToken
	}
	return c.attach(b)
}

func (c *Client) attach(b sandboxBody) *Sandbox {
	sb := &Sandbox{ID: b.SandboxID, TemplateID: b.TemplateID, EnvdVersion: b.EnvdVersion,
		Domain: c.cfg.Domain, accessToken: b.EnvdAccessToken, client: c}
	if b.Domain != nil && *b.Domain != "" {
		sb.Domain = *b.Domain
	}
	if b.TrafficAccessToken != nil {
		sb.trafficToken = *b.TrafficAccessToken
	}
	sb.envd = c.newSandboxConn(sb, EnvdPort)
	sb.interp = c.newSandboxConn(sb, InterpreterPort)
	sb.files = &Filesystem{sb: sb}
	sb.commands = &Commands{sb: sb}
	return sb
}

// AccessToken is the envd access token of a secured sandbox (empty otherwise).
// Keep it secret: it grants full control of the sandbox.
func (s *Sandbox) AccessToken() string { return s.accessToken }

// Files gives access to the sandbox filesystem.
func (s *Sandbox) Files() *Filesystem { return s.files }

// Commands runs and manages processes in the sandbox.
func (s *Sandbox) Commands() *Commands { return s.commands }

// Pty runs interactive terminals in the sandbox.
func (s *Sandbox) Pty() *Pty { return &Pty{sb: s} }

// Host returns the public host name of a port of the sandbox, e.g. for a web
// server started inside it.
func (s *Sandbox) Host(port int) string { return s.client.cfg.host(s.ID, s.Domain, port) }

// Kill terminates the sandbox.
func (s *Sandbox) Kill(ctx context.Context) error { return s.client.Kill(ctx, s.ID) }

// SetTimeout replaces the remaining lifetime of the sandbox.
func (s *Sandbox) SetTimeout(ctx context.Context, d time.Duration) error {
	return s.client.SetTimeout(ctx, s.ID, d)
}

// Pause pauses the sandbox (see Client.Pause).
func (s *Sandbox) Pause(ctx context.Context) error { return s.client.Pause(ctx, s.ID) }

// Info returns the sandbox's details from the API.
func (s *Sandbox) Info(ctx context.Context) (*SandboxInfo, error) { return s.client.GetInfo(ctx, s.ID) }

// Metrics returns the sandbox's resource-usage samples.
func (s *Sandbox) Metrics(ctx context.Context, p MetricsParams) ([]Metric, error) {
	if err := s.needEnvd("sandboxes.metrics", envdMetrics); err != nil {
		return nil, err
	}
	return s.client.Metrics(ctx, s.ID, p)
}

// IsRunning probes envd's health endpoint: false (and no error) when the
// sandbox proxy reports the sandbox gone.
func (s *Sandbox) IsRunning(ctx context.Context) (bool, error) {
	err := s.envd.health(ctx)
	if err == nil {
		return true, nil
	}
	if IsNotFound(err) {
		return false, nil
	}
	return false, err
}
