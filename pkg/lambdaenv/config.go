// Package lambdaenv is the Lambda functions' environment: their
// configuration, read from environment variables the CDK stack sets, and
// builders that construct once, at init, only the clients a function needs,
// then the handler it serves. functions/<name>/main.go stays a few lines.
package lambdaenv

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/authorizer"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/sessionconfig"
)

// Environment variables read by Load.
const (
	EnvTenant       = "SESSIONBOX_TENANT"
	EnvTable        = "SESSIONBOX_TABLE"
	EnvBucket       = "SESSIONBOX_BUCKET"
	EnvEventBus     = "SESSIONBOX_EVENT_BUS"
	EnvE2BSecretARN = "SESSIONBOX_E2B_SECRET_ARN"
	EnvDLQURL       = "SESSIONBOX_DLQ_URL"
	EnvJWTIssuer    = "SESSIONBOX_JWT_ISSUER"
	EnvJWTAudience  = "SESSIONBOX_JWT_AUDIENCE"
	EnvJWTJWKSURL   = "SESSIONBOX_JWT_JWKS_URL"
	EnvStackID      = "SESSIONBOX_STACK_ID"
	EnvOrigins      = "SESSIONBOX_ALLOWED_ORIGINS"
	// EnvBearerOnly ("true") makes the authorizer read Authorization:
	// Bearer alone; the stack sets it whenever API Gateway caches the
	// authorizer's answers keyed on that header.
	EnvBearerOnly = "SESSIONBOX_AUTH_BEARER_ONLY"
	// The session knobs (template, timeouts, caps, internet access, output
	// budgets) are pkg/sessionconfig's, shared with sessionbox serve.

	// Local runs give the E2B key and URLs directly, like the E2B SDKs.
	EnvE2BAPIKey     = "E2B_API_KEY"
	EnvE2BAPIURL     = "E2B_API_URL"
	EnvE2BSandboxURL = "E2B_SANDBOX_URL"
	EnvE2BDomain     = "E2B_DOMAIN"
	EnvLogLevel      = "AWS_LAMBDA_LOG_LEVEL"
)

// Needs says which outside systems a function talks to; Load requires only
// their settings and the builders construct only their clients.
type Needs uint8

const (
	NeedStore Needs = 1 << iota
	NeedSandboxes
	NeedBlobs
	NeedBus
)

// Has reports whether n includes every need in x.
func (n Needs) Has(x Needs) bool { return n&x == x }

// Config is one function's configuration.
type Config struct {
	Tenant   string
	Table    string
	Bucket   string
	EventBus string
	// E2BSecretARN names the secret holding the E2B API key; E2BAPIKey, when
	// set (local runs), is used instead and no secret is read.
	E2BSecretARN  string
	E2BAPIKey     string
	E2BAPIURL     string
	E2BSandboxURL string
	E2BDomain     string
	// DLQURL is where failed run events end up (the stack's on-failure
	// destination); the runs function only reports it.
	DLQURL string
	// JWT is set when issuer, audience and JWKS URL all are.
	JWT            *authorizer.JWTConfig
	BearerOnly     bool
	StackID        string
	AllowedOrigins []string
	Session        session.Config
	LogLevel       slog.Level
}

// Load reads the configuration from getenv (os.Getenv in production) and
// checks that everything needs requires is there, naming every problem.
func Load(getenv func(string) string, needs Needs) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{
		Tenant: get(EnvTenant), Table: get(EnvTable), Bucket: get(EnvBucket), EventBus: get(EnvEventBus),
		E2BSecretARN: get(EnvE2BSecretARN), E2BAPIKey: get(EnvE2BAPIKey), E2BAPIURL: get(EnvE2BAPIURL),
		E2BSandboxURL: get(EnvE2BSandboxURL), E2BDomain: get(EnvE2BDomain), DLQURL: get(EnvDLQURL),
		StackID: get(EnvStackID), AllowedOrigins: splitList(get(EnvOrigins)),
	}
	var errs []error
	require := func(need Needs, v, name string) {
		if needs.Has(need) && v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	if c.Tenant == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvTenant))
	} else if err := checkName(c.Tenant); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvTenant, err))
	}
	require(NeedStore, c.Table, EnvTable)
	require(NeedBlobs, c.Bucket, EnvBucket)
	require(NeedBus, c.EventBus, EnvEventBus)
	if needs.Has(NeedSandboxes) && c.E2BSecretARN == "" && c.E2BAPIKey == "" {
		errs = append(errs, fmt.Errorf("%s (or %s for local runs) is required", EnvE2BSecretARN, EnvE2BAPIKey))
	}
	if c.StackID == "" && c.Tenant != "" {
		// The orphan sweep kills only sandboxes carrying this id, so it
		// must be stable per stack. The stack always sets a deployment-
		// unique one (<account>:<region>:<stack name>); this fallback, for
		// functions run by hand, is the stack's name, which deployments of
		// one tenant in other accounts or regions on the same E2B key share.
		c.StackID = "sessionbox-" + c.Tenant
	}
	jwt, err := loadJWT(get)
	errs = append(errs, err)
	c.BearerOnly, err = parseBool(EnvBearerOnly, get(EnvBearerOnly))
	errs = append(errs, err)
	c.JWT = jwt
	c.Session, err = sessionconfig.Load(sessionconfig.FromEnv(get), sessionconfig.Lambda)
	errs = append(errs, err)
	c.Session.Tenant, c.Session.StackID = c.Tenant, c.StackID
	c.LogLevel, err = parseLevel(get(EnvLogLevel))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// parseBool reads a boolean variable: empty is false.
func parseBool(name, v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not true or false", name, v)
	}
	return b, nil
}

// checkName keeps the tenant to what keys, metrics and bus names accept.
func checkName(s string) error {
	if len(s) > 64 {
		return errors.New("at most 64 characters")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("%q is not allowed: use A-Z a-z 0-9 . _ -", r)
		}
	}
	return nil
}

func loadJWT(get func(string) string) (*authorizer.JWTConfig, error) {
	j := authorizer.JWTConfig{Issuer: get(EnvJWTIssuer), Audience: get(EnvJWTAudience), JWKSURL: get(EnvJWTJWKSURL)}
	switch set := countSet(j.Issuer, j.Audience, j.JWKSURL); set {
	case 0:
		return nil, nil
	case 3:
		return &j, nil
	}
	return nil, fmt.Errorf("%s, %s and %s go together: set all three or none", EnvJWTIssuer, EnvJWTAudience, EnvJWTJWKSURL)
}

func countSet(vs ...string) int {
	n := 0
	for _, v := range vs {
		if v != "" {
			n++
		}
	}
	return n
}

// parseLevel reads Lambda's application log level (advanced logging
// controls); TRACE is DEBUG and FATAL is ERROR, slog having neither.
func parseLevel(s string) (slog.Level, error) {
	switch strings.ToUpper(s) {
	case "", "INFO":
		return slog.LevelInfo, nil
	case "TRACE", "DEBUG":
		return slog.LevelDebug, nil
	case "WARN":
		return slog.LevelWarn, nil
	case "ERROR", "FATAL":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%s: %q is not one of TRACE DEBUG INFO WARN ERROR FATAL", EnvLogLevel, s)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
