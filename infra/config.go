package main

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Context keys the app reads (`cdk synth -c key=value` or cdk.json "context").
const (
	ctxTenant         = "tenant"
	ctxDistDir        = "distDir"
	ctxAllowedOrigins = "allowedOrigins"
	ctxE2BSecretName  = "e2bSecretName"
	ctxJWTIssuer      = "jwtIssuer"
	ctxJWTAudience    = "jwtAudience"
	ctxJWTJWKSURL     = "jwtJwksUrl"
	ctxRemovalPolicy  = "removalPolicy"
	ctxLogRetention   = "logRetentionDays"
	ctxThrottleRate   = "throttleRate"
	ctxThrottleBurst  = "throttleBurst"
	ctxAcceptXAPIKey  = "acceptXApiKey"
	ctxAPIGatewayRole = "apiGatewayCloudWatchRole"
	ctxAlarmTopicARN  = "alarmTopicArn"
	ctxStageName      = "stageName"
	ctxPlayground     = "playground"
	ctxE2BDomain      = "e2bDomain"
	ctxE2BAPIURL      = "e2bApiUrl"
	ctxLogLevel       = "logLevel"
	ctxDeletionProt   = "deletionProtection"
	ctxTracing        = "tracing"
	ctxAccessLogs     = "bucketAccessLogs"
	ctxWAF            = "wafWebAcl"
	ctxAuthorizerConc = "authorizerConcurrency"
	ctxStreamConc     = "streamConcurrency"
	ctxReaperConc     = "reaperConcurrency"
	defaultStageName  = "prod"
	defaultRetention  = 30
	defaultRate       = 50
	defaultBurst      = 100
	removalRetain     = "retain"
	removalDestroy    = "destroy"
	maxTenantLen      = 24
)

// contextKeys is every context key the app reads (infra/README's options
// table lists each, a test holds them equal).
func contextKeys() []string {
	keys := []string{ctxTenant, ctxDistDir, ctxAllowedOrigins, ctxE2BSecretName, ctxJWTIssuer, ctxJWTAudience, ctxJWTJWKSURL,
		ctxRemovalPolicy, ctxLogRetention, ctxThrottleRate, ctxThrottleBurst, ctxAcceptXAPIKey, ctxAPIGatewayRole,
		ctxAlarmTopicARN, ctxStageName, ctxPlayground, ctxE2BDomain, ctxE2BAPIURL, ctxLogLevel, ctxDeletionProt,
		ctxTracing, ctxAccessLogs, ctxWAF, ctxAuthorizerConc, ctxStreamConc, ctxReaperConc}
	for _, k := range sessionKnobs {
		keys = append(keys, k.ctx)
	}
	return keys
}

// Config is everything the stack varies on, read from CDK context and
// validated before any construct exists.
type Config struct {
	Tenant         string
	DistDir        string // "" means <repository root>/dist
	AllowedOrigins []string
	// E2BSecretName imports an existing secret by name; "" creates one.
	E2BSecretName string
	JWTIssuer     string
	JWTAudience   string
	JWTJWKSURL    string
	// RetainData keeps the table, bucket and secret when the stack goes.
	RetainData       bool
	LogRetentionDays int
	ThrottleRate     float64
	ThrottleBurst    float64
	// DeletionProtection turns on the table's deletion protection; off by
	// default because DynamoDB then refuses the delete a failed first
	// create's rollback needs (infra/README, day one).
	DeletionProtection bool
	// AcceptXAPIKey lets the authorizer see X-API-Key as well as
	// Authorization, as local serve does, which means no identity source
	// and so no result cache. Off (the default), only Authorization works
	// and decisions are cached (infra/README, "API keys").
	AcceptXAPIKey bool
	// Tracing (the default) turns on X-Ray for the functions and the stage.
	Tracing bool
	// BucketAccessLogs (the default) writes the transfer bucket's server
	// access logs to a log bucket of their own.
	BucketAccessLogs bool
	// WAF puts a WAFv2 web ACL (AWS managed rules and a per-IP rate rule)
	// in front of the stage; off by default for its fixed monthly cost.
	WAF bool
	// Reserved concurrency, 0 for none: Lambda refuses any reservation
	// that would leave an account fewer than 100 unreserved executions, so
	// the defaults reserve nothing and fit a new account's quota of 10
	// (infra/README, "Concurrency"). AuthorizerConcurrency keeps that many
	// executions for the authorizer, StreamConcurrency caps each streaming
	// function, ReaperConcurrency (1) stops reaper ticks overlapping.
	AuthorizerConcurrency int
	StreamConcurrency     int
	ReaperConcurrency     int
	// APIGatewayCloudWatchRole sets the account-wide role API Gateway needs
	// to write access logs; one stack per account and region is enough.
	APIGatewayCloudWatchRole bool
	AlarmTopicARN            string
	StageName                string
	// E2BDomain and E2BAPIURL point the functions at a self-hosted E2B.
	E2BDomain string
	E2BAPIURL string
	// LogLevel is the functions' application log level (INFO).
	LogLevel string
	// Playground (the default) serves the playground page (pkg/playground)
	// at the API's root from the status function, without the authorizer,
	// and lets it upload to the bucket through presigned URLs.
	Playground bool
	// SessionEnv holds the session knobs given in context, by variable;
	// a knob not given keeps the functions' default (pkg/sessionconfig).
	SessionEnv map[string]string
}

// knobKind is how a session knob's context value is checked.
type knobKind uint8

const (
	knobWhole knobKind = iota // a positive whole number
	knobBool
	knobName // a template name: no spaces
)

// sessionKnobs are the session settings the functions read, pkg/sessionconfig
// in the main module, by context key; a test there holds the two lists
// equal (TestInfraKnobsMatch). The functions parse them again at init with the same rules.
var sessionKnobs = []struct {
	ctx, env string
	kind     knobKind
}{
	{"template", "SESSIONBOX_TEMPLATE", knobName},
	{"idleTimeoutSecs", "SESSIONBOX_IDLE_TIMEOUT_SECS", knobWhole},
	{"lifetimeSecs", "SESSIONBOX_LIFETIME_SECS", knobWhole},
	{"maxSandboxLifetimeSecs", "SESSIONBOX_MAX_SANDBOX_LIFETIME_SECS", knobWhole},
	{"execTimeoutSecs", "SESSIONBOX_EXEC_TIMEOUT_SECS", knobWhole},
	{"maxLiveSandboxes", "SESSIONBOX_MAX_LIVE_SANDBOXES", knobWhole},
	{"maxLiveSandboxesPerPrincipal", "SESSIONBOX_MAX_LIVE_SANDBOXES_PER_PRINCIPAL", knobWhole},
	{"maxSandboxesPerKey", "SESSIONBOX_MAX_SANDBOXES_PER_KEY", knobWhole},
	{"reapBatch", "SESSIONBOX_REAP_BATCH", knobWhole},
	{"maxOutputBytes", "SESSIONBOX_MAX_OUTPUT_BYTES", knobWhole},
	{"maxResultBytes", "SESSIONBOX_MAX_RESULT_BYTES", knobWhole},
	{"allowInternetAccess", "SESSIONBOX_ALLOW_INTERNET_ACCESS", knobBool},
	{"allowPrivateUrls", "SESSIONBOX_ALLOW_PRIVATE_URLS", knobBool},
	{"workspaces", "SESSIONBOX_WORKSPACES", knobBool},
	{"maxWorkspaceBytes", "SESSIONBOX_MAX_WORKSPACE_BYTES", knobWhole},
	{"checkpointIntervalSecs", "SESSIONBOX_CHECKPOINT_INTERVAL_SECS", knobWhole},
	{"ratePerSecond", "SESSIONBOX_RATE_PER_SECOND", knobWhole},
	{"rateBurst", "SESSIONBOX_RATE_BURST", knobWhole},
}

// logLevels are the application log levels Lambda offers.
var logLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}

// tenantPattern keeps the tenant usable in a stack name, an event bus name,
// a dashboard name and a secret name: lower case, digits and inner hyphens.
var tenantPattern = regexp.MustCompile(`^[a-z][a-z0-9-]*[a-z0-9]$`)

// secretNamePattern is what Secrets Manager accepts in a secret name.
var secretNamePattern = regexp.MustCompile(`^[A-Za-z0-9/_+=.@-]{1,512}$`)

// randomSuffix looks like the suffix Secrets Manager appends to ARNs; a name
// ending like this makes partial-ARN lookups ambiguous.
var randomSuffix = regexp.MustCompile(`-[A-Za-z0-9]{6}$`)

var stageNamePattern = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// ConfigFromContext reads and validates the stack configuration. get returns
// the context value for a key or nil; values from the CLI are strings, values
// from cdk.json may be JSON numbers and booleans.
func ConfigFromContext(get func(key string) any) (Config, error) {
	c := Config{StageName: defaultStageName}
	var err error
	if c.Tenant, err = tenantFrom(get(ctxTenant)); err != nil {
		return Config{}, err
	}
	c.DistDir = stringOf(get(ctxDistDir))
	if c.AllowedOrigins, err = originsFrom(get(ctxAllowedOrigins)); err != nil {
		return Config{}, err
	}
	if c.E2BSecretName, err = secretNameFrom(get(ctxE2BSecretName)); err != nil {
		return Config{}, err
	}
	if err = c.readJWT(get); err != nil {
		return Config{}, err
	}
	if err = c.readOperations(get); err != nil {
		return Config{}, err
	}
	if err = c.readFunctionSettings(get); err != nil {
		return Config{}, err
	}
	if err = c.readGuards(get); err != nil {
		return Config{}, err
	}
	return c, nil
}

// maxReserved is Lambda's default account concurrency quota; a
// reservation above it is a typo, not a plan.
const maxReserved = 1000

// readGuards reads tracing, logging, WAF and concurrency settings.
func (c *Config) readGuards(get func(string) any) error {
	var err error
	for _, b := range []struct {
		key string
		def bool
		dst *bool
	}{{ctxTracing, true, &c.Tracing}, {ctxAccessLogs, true, &c.BucketAccessLogs}, {ctxWAF, false, &c.WAF}} {
		if *b.dst, err = boolFrom(b.key, get(b.key), b.def); err != nil {
			return err
		}
	}
	for _, n := range []struct {
		key string
		dst *int
	}{{ctxAuthorizerConc, &c.AuthorizerConcurrency}, {ctxStreamConc, &c.StreamConcurrency}, {ctxReaperConc, &c.ReaperConcurrency}} {
		if *n.dst, err = countFrom(n.key, get(n.key)); err != nil {
			return err
		}
	}
	return nil
}

// countFrom reads a whole number from 0 to maxReserved, 0 when not given.
func countFrom(key string, v any) (int, error) {
	if v == nil || stringOf(v) == "" || stringOf(v) == "0" {
		return 0, nil
	}
	n, err := positiveNumber(key, v, 0)
	if err != nil {
		return 0, fmt.Errorf("%w (0 for none)", err)
	}
	if n != math.Trunc(n) || n > maxReserved {
		return 0, fmt.Errorf("context %s: %v is not a whole number from 0 to %d", key, n, maxReserved)
	}
	return int(n), nil
}

// readFunctionSettings reads what the stack passes to the functions as
// environment variables: the session knobs, the E2B endpoint and the log
// level.
func (c *Config) readFunctionSettings(get func(string) any) error {
	c.SessionEnv = map[string]string{}
	for _, k := range sessionKnobs {
		v, err := knobFrom(k.ctx, k.kind, get(k.ctx))
		if err != nil {
			return err
		}
		if v != "" {
			c.SessionEnv[k.env] = v
		}
	}
	c.E2BDomain = stringOf(get(ctxE2BDomain))
	if strings.ContainsAny(c.E2BDomain, "/: ") {
		return fmt.Errorf("context %s: %q is not a domain like e2b.example.com", ctxE2BDomain, c.E2BDomain)
	}
	c.E2BAPIURL = stringOf(get(ctxE2BAPIURL))
	if c.E2BAPIURL != "" {
		if err := httpsURL(c.E2BAPIURL); err != nil {
			return fmt.Errorf("context %s: %w", ctxE2BAPIURL, err)
		}
	}
	c.LogLevel = strings.ToUpper(stringOf(get(ctxLogLevel)))
	if c.LogLevel == "" {
		c.LogLevel = "INFO"
	}
	if !slices.Contains(logLevels, c.LogLevel) {
		return fmt.Errorf("context %s: %q is not one of %s", ctxLogLevel, c.LogLevel, strings.Join(logLevels, " "))
	}
	return nil
}

// knobFrom checks one knob's context value and returns it as the variable's
// text, "" when not given.
func knobFrom(key string, kind knobKind, v any) (string, error) {
	if v == nil || stringOf(v) == "" {
		return "", nil
	}
	switch kind {
	case knobBool:
		b, err := boolFrom(key, v, false)
		return strconv.FormatBool(b), err
	case knobName:
		s := stringOf(v)
		if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return "", fmt.Errorf("context %s: %q is not a template name", key, s)
		}
		return s, nil
	}
	n, err := positiveNumber(key, v, 0)
	if err != nil {
		return "", err
	}
	if n != math.Trunc(n) || n > math.MaxInt32 {
		return "", fmt.Errorf("context %s: %v is not a whole number", key, n)
	}
	return strconv.Itoa(int(n)), nil
}

func (c *Config) readJWT(get func(string) any) error {
	c.JWTIssuer = stringOf(get(ctxJWTIssuer))
	c.JWTAudience = stringOf(get(ctxJWTAudience))
	c.JWTJWKSURL = stringOf(get(ctxJWTJWKSURL))
	if c.JWTIssuer == "" && c.JWTAudience == "" && c.JWTJWKSURL == "" {
		return nil
	}
	// The authorizer (pkg/lambdaenv) validates issuer, audience and
	// signature together or not at all.
	if c.JWTIssuer == "" || c.JWTAudience == "" || c.JWTJWKSURL == "" {
		return fmt.Errorf("context %s, %s and %s go together: set all three or none", ctxJWTIssuer, ctxJWTAudience, ctxJWTJWKSURL)
	}
	if err := httpsURL(c.JWTJWKSURL); err != nil {
		return fmt.Errorf("context %s: %w", ctxJWTJWKSURL, err)
	}
	return nil
}

func (c *Config) readOperations(get func(string) any) error {
	var err error
	switch p := strings.ToLower(stringOf(get(ctxRemovalPolicy))); p {
	case "", removalRetain:
		c.RetainData = true
	case removalDestroy:
		c.RetainData = false
	default:
		return fmt.Errorf("context %s: %q is neither %q nor %q", ctxRemovalPolicy, p, removalRetain, removalDestroy)
	}
	if c.LogRetentionDays, err = retentionFrom(get(ctxLogRetention)); err != nil {
		return err
	}
	if c.ThrottleRate, err = positiveNumber(ctxThrottleRate, get(ctxThrottleRate), defaultRate); err != nil {
		return err
	}
	if c.ThrottleBurst, err = positiveNumber(ctxThrottleBurst, get(ctxThrottleBurst), defaultBurst); err != nil {
		return err
	}
	if c.ThrottleBurst != math.Trunc(c.ThrottleBurst) {
		return fmt.Errorf("context %s: burst %v is not a whole number", ctxThrottleBurst, c.ThrottleBurst)
	}
	if c.AcceptXAPIKey, err = boolFrom(ctxAcceptXAPIKey, get(ctxAcceptXAPIKey), false); err != nil {
		return err
	}
	if c.DeletionProtection, err = boolFrom(ctxDeletionProt, get(ctxDeletionProt), false); err != nil {
		return err
	}
	if c.APIGatewayCloudWatchRole, err = boolFrom(ctxAPIGatewayRole, get(ctxAPIGatewayRole), true); err != nil {
		return err
	}
	if c.Playground, err = boolFrom(ctxPlayground, get(ctxPlayground), true); err != nil {
		return err
	}
	c.AlarmTopicARN = stringOf(get(ctxAlarmTopicARN))
	if c.AlarmTopicARN != "" && !strings.HasPrefix(c.AlarmTopicARN, "arn:") {
		return fmt.Errorf("context %s: %q is not an ARN", ctxAlarmTopicARN, c.AlarmTopicARN)
	}
	if s := stringOf(get(ctxStageName)); s != "" {
		if !stageNamePattern.MatchString(s) {
			return fmt.Errorf("context %s: %q must be letters, digits and underscores", ctxStageName, s)
		}
		c.StageName = s
	}
	return nil
}

func tenantFrom(v any) (string, error) {
	t := stringOf(v)
	if t == "" {
		return "", fmt.Errorf("context %s is required: cdk synth -c tenant=acme (or make deploy TENANT=acme)", ctxTenant)
	}
	if len(t) > maxTenantLen || !tenantPattern.MatchString(t) || strings.Contains(t, "--") {
		return "", fmt.Errorf("context %s: %q must be 2 to %d lower-case letters, digits and single inner hyphens, starting with a letter", ctxTenant, t, maxTenantLen)
	}
	return t, nil
}

func originsFrom(v any) ([]string, error) {
	raw := stringOf(v)
	if raw == "" {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, o := range strings.Split(raw, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if err := origin(o); err != nil {
			return nil, fmt.Errorf("context %s: %w", ctxAllowedOrigins, err)
		}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out, nil
}

// origin accepts a browser origin: scheme and host (and port), nothing more.
// "*" is refused: the API takes credentials, so origins are named.
func origin(o string) error {
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an origin like https://app.example.com", o)
	}
	local := u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1"
	if u.Scheme != "https" && !(u.Scheme == "http" && local) {
		return fmt.Errorf("%q: origins must be https (http only for localhost)", o)
	}
	return nil
}

func secretNameFrom(v any) (string, error) {
	n := stringOf(v)
	if n == "" {
		return "", nil
	}
	if !secretNamePattern.MatchString(n) {
		return "", fmt.Errorf("context %s: %q is not a valid secret name", ctxE2BSecretName, n)
	}
	if randomSuffix.MatchString(n) {
		return "", fmt.Errorf("context %s: %q ends like a Secrets Manager ARN suffix (hyphen and six characters), which makes lookups by name ambiguous", ctxE2BSecretName, n)
	}
	return n, nil
}

func httpsURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q is not an https URL", s)
	}
	return nil
}

func retentionFrom(v any) (int, error) {
	n, err := positiveNumber(ctxLogRetention, v, defaultRetention)
	if err != nil {
		return 0, err
	}
	if _, ok := retentionDays[int(n)]; !ok || n != math.Trunc(n) {
		return 0, fmt.Errorf("context %s: %v is not a retention CloudWatch Logs offers (1, 3, 5, 7, 14, 30, 60, 90, ... days)", ctxLogRetention, n)
	}
	return int(n), nil
}

func positiveNumber(key string, v any, def float64) (float64, error) {
	switch x := v.(type) {
	case nil:
		return def, nil
	case float64:
		if x <= 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, fmt.Errorf("context %s: %v must be a positive number", key, x)
		}
		return x, nil
	case string:
		if x == "" {
			return def, nil
		}
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, fmt.Errorf("context %s: %q is not a number", key, x)
		}
		return positiveNumber(key, f, def)
	default:
		return 0, fmt.Errorf("context %s: %v (%T) is not a number", key, v, v)
	}
}

func boolFrom(key string, v any, def bool) (bool, error) {
	switch x := v.(type) {
	case nil:
		return def, nil
	case bool:
		return x, nil
	case string:
		if x == "" {
			return def, nil
		}
		b, err := strconv.ParseBool(x)
		if err != nil {
			return false, fmt.Errorf("context %s: %q is not true or false", key, x)
		}
		return b, nil
	default:
		return false, fmt.Errorf("context %s: %v (%T) is not true or false", key, v, v)
	}
}

func stringOf(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case nil:
		return ""
	default:
		return strings.TrimSpace(fmt.Sprint(x))
	}
}
