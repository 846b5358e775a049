// Package sessionconfig reads the session knobs, the settings of
// session.Config an operator tunes, with one set of names, defaults and
// parsing for the Lambda functions (pkg/lambdaenv, from variables the CDK
// stack sets) and `sessionbox serve` (from flags and the same variables).
// It reads nothing itself: callers pass a Lookup over their environment.
package sessionconfig

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Deployment is where sessionbox runs. The defaults of the two differ in
// one knob only, internet access, and Load is the one place that says so.
type Deployment uint8

const (
	// Lambda is production: E2B sandboxes are online by default, so
	// install reaches PyPI.
	Lambda Deployment = iota
	// Local is `sessionbox serve`: sandboxes are offline by default, since
	// the local runtime gives them a network only as root with slirp4netns.
	Local
)

// InternetByDefault is whether d's sandboxes reach the internet when
// SESSIONBOX_ALLOW_INTERNET_ACCESS is not set.
func (d Deployment) InternetByDefault() bool { return d == Lambda }

// Environment variables of the knobs.
const (
	EnvTemplate        = "SESSIONBOX_TEMPLATE"
	EnvIdleSecs        = "SESSIONBOX_IDLE_TIMEOUT_SECS"
	EnvLifetimeSecs    = "SESSIONBOX_LIFETIME_SECS"
	EnvMaxLifetimeSecs = "SESSIONBOX_MAX_SANDBOX_LIFETIME_SECS"
	EnvExecSecs        = "SESSIONBOX_EXEC_TIMEOUT_SECS"
	EnvMaxLive         = "SESSIONBOX_MAX_LIVE_SANDBOXES"
	EnvMaxPerPrincipal = "SESSIONBOX_MAX_LIVE_SANDBOXES_PER_PRINCIPAL"
	EnvMaxPerKey       = "SESSIONBOX_MAX_SANDBOXES_PER_KEY"
	EnvReapBatch       = "SESSIONBOX_REAP_BATCH"
	EnvInternet        = "SESSIONBOX_ALLOW_INTERNET_ACCESS"
	EnvMaxOutputBytes  = "SESSIONBOX_MAX_OUTPUT_BYTES"
	EnvMaxResultBytes  = "SESSIONBOX_MAX_RESULT_BYTES"
	EnvPrivateURLs     = "SESSIONBOX_ALLOW_PRIVATE_URLS"
	EnvWorkspaces      = "SESSIONBOX_WORKSPACES"
	EnvMaxWorkspace    = "SESSIONBOX_MAX_WORKSPACE_BYTES"
	EnvCheckpointSecs  = "SESSIONBOX_CHECKPOINT_INTERVAL_SECS"
	EnvRatePerSecond   = "SESSIONBOX_RATE_PER_SECOND"
	EnvRateBurst       = "SESSIONBOX_RATE_BURST"
)

// Knob is one setting: its variable, serve's flag for it, and how a value
// is parsed into session.Config.
type Knob struct {
	Env   string
	Flag  string
	Usage string
	// Bool knobs take "true" or "false" (as strconv.ParseBool reads them);
	// a flag of one may be given without a value.
	Bool bool
	set  func(c *session.Config, v string) error
}

// Knobs lists every knob, in a stable order.
func Knobs() []Knob {
	secs := func(dst func(*session.Config) *time.Duration) func(*session.Config, string) error {
		return func(c *session.Config, v string) error {
			n, err := positive(v)
			*dst(c) = time.Duration(n) * time.Second
			return err
		}
	}
	count := func(dst func(*session.Config) *int) func(*session.Config, string) error {
		return func(c *session.Config, v string) error {
			n, err := positive(v)
			*dst(c) = n
			return err
		}
	}
	return []Knob{
		{Env: EnvTemplate, Flag: "template", Usage: "template of code interpreter sandboxes (default code-interpreter-v1)",
			set: func(c *session.Config, v string) error {
				if strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
					return fmt.Errorf("%q is not a template name", v)
				}
				c.DefaultTemplate = v
				return nil
			}},
		{Env: EnvIdleSecs, Flag: "idle-timeout-secs", Usage: "seconds a session may idle before its sandbox is paused or killed (default 1800)",
			set: secs(func(c *session.Config) *time.Duration { return &c.IdleTimeout })},
		{Env: EnvLifetimeSecs, Flag: "lifetime-secs", Usage: "seconds one sandbox of a session lives: then an idle session is stopped, one in use gets a fresh sandbox with its workspace restored (default and at most the max sandbox lifetime)",
			set: secs(func(c *session.Config) *time.Duration { return &c.Lifetime })},
		{Env: EnvMaxLifetimeSecs, Flag: "max-sandbox-lifetime-secs", Usage: "the E2B plan's longest sandbox run, no timeout asked of E2B is longer (default 3600, the Base plan's; 86400 on Pro)",
			set: secs(func(c *session.Config) *time.Duration { return &c.MaxSandboxLifetime })},
		{Env: EnvExecSecs, Flag: "exec-timeout-secs", Usage: "default time limit of an execution or install, in seconds (default 300)",
			set: secs(func(c *session.Config) *time.Duration { return &c.ExecTimeout })},
		{Env: EnvMaxLive, Flag: "max-live-sandboxes", Usage: "live sandboxes a tenant may hold (default 20, at most 500)",
			set: count(func(c *session.Config) *int { return &c.MaxLiveSandboxesPerTenant })},
		{Env: EnvMaxPerPrincipal, Flag: "max-live-sandboxes-per-principal",
			Usage: "live sandboxes one principal may hold while others hold some (default half the tenant's cap, rounded up)",
			set:   count(func(c *session.Config) *int { return &c.MaxLiveSandboxesPerPrincipal })},
		{Env: EnvMaxPerKey, Flag: "max-sandboxes-per-key",
			Usage: "running sandboxes of the E2B key, shared by every tenant and deployment on it, counted at E2B before each start (default 20, the Base plan's)",
			set:   count(func(c *session.Config) *int { return &c.MaxSandboxesPerKey })},
		{Env: EnvReapBatch, Flag: "reap-batch", Usage: "due sessions the reaper handles per tick (default 100)",
			set: count(func(c *session.Config) *int { return &c.ReapBatch })},
		{Env: EnvMaxOutputBytes, Flag: "max-output-bytes", Usage: "bytes of stdout and of stderr kept per execution (default 204800)",
			set: count(func(c *session.Config) *int { return &c.MaxOutputBytes })},
		{Env: EnvMaxResultBytes, Flag: "max-result-bytes", Usage: "bytes of rich results kept per execution, JSON-encoded (default 1048576)",
			set: count(func(c *session.Config) *int { return &c.MaxResultBytes })},
		{Env: EnvInternet, Flag: "internet", Bool: true,
			Usage: "let sandboxes reach the internet (pip from PyPI); default true in Lambda, false in serve, where it needs root and slirp4netns",
			set: func(c *session.Config, v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("%q is neither true nor false", v)
				}
				c.AllowInternetAccess = b
				return nil
			}},
		{Env: EnvWorkspaces, Flag: "workspaces", Bool: true,
			Usage: "keep each session's /home/user in a durable workspace in the bucket, restored into its next sandbox (default true)",
			set: func(c *session.Config, v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("%q is neither true nor false", v)
				}
				c.DisableWorkspaces = !b
				return nil
			}},
		{Env: EnvMaxWorkspace, Flag: "max-workspace-bytes", Usage: "bytes a workspace checkpoint may keep, caches excluded (default 1073741824)",
			set: func(c *session.Config, v string) error {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n <= 0 {
					return fmt.Errorf("%q is not a positive whole number", v)
				}
				c.MaxWorkspaceBytes = n
				return nil
			}},
		{Env: EnvCheckpointSecs, Flag: "checkpoint-interval-secs", Usage: "least seconds between the reaper's checkpoints of a session in use (default 300)",
			set: secs(func(c *session.Config) *time.Duration { return &c.CheckpointInterval })},
		{Env: EnvPrivateURLs, Flag: "allow-private-urls", Bool: true,
			Usage: "let uploads from URLs fetch from loopback, private, link-local, shared and unique-local addresses (never cloud metadata); default false, for tests and private deployments",
			set: func(c *session.Config, v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("%q is neither true nor false", v)
				}
				c.URLUploads.AllowPrivate = b
				return nil
			}},
		{Env: EnvRatePerSecond, Flag: "rate-per-second", Usage: "API requests per second one principal may make, on average (default 20); more are 429",
			set: count(func(c *session.Config) *int { return &c.RequestRate.PerSecond })},
		{Env: EnvRateBurst, Flag: "rate-burst", Usage: "API requests one principal may make at once (default twice the rate)",
			set: count(func(c *session.Config) *int { return &c.RequestRate.Burst })},
	}
}

// Lookup returns a knob's raw value and where it came from, for messages
// ("SESSIONBOX_LIFETIME_SECS", "--lifetime-secs"); "" means unset.
type Lookup func(k Knob) (value, source string)

// FromEnv looks knobs up in an environment: getenv is os.Getenv in a main,
// a map in tests.
func FromEnv(getenv func(string) string) Lookup {
	return func(k Knob) (string, string) { return getenv(k.Env), k.Env }
}

// Load builds the session configuration of d from look. An unset knob
// keeps its default (session.Config's, or d's for internet access); a
// malformed one is an error naming where it came from and the value, and
// every malformed knob is named, not only the first.
func Load(look Lookup, d Deployment) (session.Config, error) {
	c := session.Config{AllowInternetAccess: d.InternetByDefault()}
	var errs []error
	for _, k := range Knobs() {
		v, src := look(k)
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		if err := k.set(&c, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src, err))
		}
	}
	return c, errors.Join(errs...)
}

// positive parses a positive whole number.
func positive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive whole number", s)
	}
	return n, nil
}
