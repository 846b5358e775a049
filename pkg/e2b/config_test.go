package e2b

import (
	"strings"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		name string
		env  map[string]string
		want Config
		err  string // the error names it; "" means none
	}{
		{"nothing set", nil, Config{}, ""},
		{"every variable", map[string]string{"E2B_API_KEY": "e2b_env", "E2B_DOMAIN": "my.domain", "E2B_API_URL": "http://api",
			"E2B_SANDBOX_URL": "http://127.0.0.1:3002/", "E2B_DEBUG": "TRUE"},
			Config{APIKey: "e2b_env", Domain: "my.domain", APIURL: "http://api", SandboxURL: "http://127.0.0.1:3002/", Debug: true}, ""},
		{"debug false", map[string]string{"E2B_DEBUG": "false"}, Config{}, ""},
		{"debug malformed", map[string]string{"E2B_DEBUG": "yes"}, Config{}, `E2B_DEBUG="yes"`},
		{"debug 1 is not true", map[string]string{"E2B_DEBUG": "1"}, Config{}, `E2B_DEBUG="1"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := configFrom(env(c.env))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil || got.APIKey != c.want.APIKey || got.Domain != c.want.Domain || got.APIURL != c.want.APIURL ||
				got.SandboxURL != c.want.SandboxURL || got.Debug != c.want.Debug {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
	t.Run("from the process environment", func(t *testing.T) {
		t.Setenv("E2B_API_KEY", "e2b_env")
		t.Setenv("E2B_API_URL", "")
		t.Setenv("E2B_DEBUG", "true")
		cfg, err := ConfigFromEnv()
		if err != nil || cfg.APIKey != "e2b_env" || !cfg.Debug {
			t.Fatalf("%+v %v", cfg, err)
		}
		if cfg.withDefaults().APIURL != "http://localhost:3000" {
			t.Errorf("debug API URL = %s", cfg.withDefaults().APIURL)
		}
	})
}

// TestNewReadsNoEnvironment: variables left in a shell change nothing of a
// client built from explicit settings; E2B_DEBUG above all, which would
// send every create to a fake sandbox.
func TestNewReadsNoEnvironment(t *testing.T) {
	for k, v := range map[string]string{"E2B_API_KEY": "e2b_env", "E2B_DOMAIN": "env.domain", "E2B_API_URL": "http://env-api",
		"E2B_SANDBOX_URL": "http://env-sandbox", "E2B_DEBUG": "true"} {
		t.Setenv(k, v)
	}
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.Config()
	if got.APIKey != "" || got.Domain != DefaultDomain || got.APIURL != "https://api.e2b.app" || got.SandboxURL != "" || got.Debug {
		t.Errorf("the zero Config read the environment: %+v", got)
	}
	if got.RequestTimeout != DefaultRequestTimeout || got.Retry.MaxAttempts != 3 {
		t.Errorf("defaults: %+v", got)
	}
	explicit := Config{APIKey: "k", Domain: "d.test", APIURL: "http://api/"}.withDefaults()
	if explicit.APIKey != "k" || explicit.Domain != "d.test" || explicit.APIURL != "http://api" || explicit.Debug {
		t.Errorf("explicit values changed: %+v", explicit)
	}
}

func TestSandboxURLRules(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		domain string
		port   int
		direct bool
		want   string
	}{
		{"sandbox url wins", Config{SandboxURL: "http://127.0.0.1:3002", Debug: true}, "", EnvdPort, false, "http://127.0.0.1:3002"},
		{"sandbox url for interpreter", Config{SandboxURL: "http://127.0.0.1:3002"}, "", InterpreterPort, false, "http://127.0.0.1:3002"},
		{"sandbox url direct routes by path", Config{SandboxURL: "http://127.0.0.1:3002/"}, "", EnvdPort, true, "http://127.0.0.1:3002/_sandboxes/sbid/49983"},
		{"debug direct", Config{Debug: true}, "", EnvdPort, true, "http://localhost:49983"},
		{"debug envd", Config{Debug: true}, "", EnvdPort, false, "http://localhost:49983"},
		{"debug interpreter", Config{Debug: true}, "", InterpreterPort, false, "http://localhost:49999"},
		{"e2b.app routes by header", Config{}, "", EnvdPort, false, "https://sandbox.e2b.app"},
		{"e2b.dev routes by header", Config{}, "e2b.dev", EnvdPort, false, "https://sandbox.e2b.dev"},
		{"direct envd url", Config{}, "", EnvdPort, true, "https://49983-sbid.e2b.app"},
		{"interpreter by host", Config{}, "", InterpreterPort, false, "https://49999-sbid.e2b.app"},
		{"self-hosted domain by host", Config{Domain: "corp.example"}, "", EnvdPort, false, "https://49983-sbid.corp.example"},
		{"sandbox domain overrides", Config{Domain: "corp.example"}, "other.example", EnvdPort, false, "https://49983-sbid.other.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg.withDefaults()
			if got := cfg.sandboxBaseURL("sbid", tt.domain, tt.port, tt.direct); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSandboxHost(t *testing.T) {
	c, err := New(Config{Domain: "d.test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sb := c.Attach("sbid", AttachParams{})
	if got := sb.Host(8080); got != "8080-sbid.d.test" {
		t.Errorf("host = %s", got)
	}
	dc, _ := New(Config{Debug: true})
	if got := dc.Attach("x", AttachParams{}).Host(3000); got != "localhost:3000" {
		t.Errorf("debug host = %s", got)
	}
}

func TestBackoffBounds(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for n := 1; n <= 8; n++ {
		step := min(p.BaseDelay<<(n-1), p.MaxDelay)
		for range 50 {
			d := p.backoff(n, 0)
			if d < step/2 || d > step {
				t.Fatalf("backoff(%d) = %v outside [%v, %v]", n, d, step/2, step)
			}
		}
	}
	if d := p.backoff(1, 3*time.Second); d != 3*time.Second {
		t.Errorf("Retry-After not honoured: %v", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]time.Duration{
		"":                              0,
		"5":                             5 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"Thu, 01 Jan 2026 00:00:30 GMT": 30 * time.Second,
		"Wed, 31 Dec 2025 00:00:30 GMT": 0,
	}
	for in, want := range tests {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestFileSignature(t *testing.T) {
	// Vectors computed independently (Python hashlib) from the algorithm in
	// E2B's SDKs: v1_ + unpadded base64(sha256("path:op:user:token[:exp]")).
	tests := []struct {
		path, op, user, token string
		exp                   int64
		want                  string
	}{
		{"/home/user/a.txt", "read", "", "tok123", 0, "v1_byj2OB/vujgbES/1KAKCaR27E+9eOrB6PzeTnIL8L6M"},
		{"/home/user/a.txt", "write", "user", "tok123", 1700000000, "v1_kCwu4usVZBCSzXHSFPk291ud3zHmpwR9v0nRPaSmYqM"},
		{"rel/b c.txt", "read", "root", "secret", 0, "v1_iWl0WJqfiyMRuKfc9AD+4L4KD4Zv3SEFAEZeSiLqDnc"},
	}
	for _, tt := range tests {
		if got := fileSignature(tt.path, tt.op, tt.user, tt.token, tt.exp); got != tt.want {
			t.Errorf("signature(%s %s) = %s, want %s", tt.path, tt.op, got, tt.want)
		}
	}
}

func TestSignedURLs(t *testing.T) {
	c, err := New(Config{SandboxURL: "http://127.0.0.1:3002"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sb := c.Attach("sbid", AttachParams{AccessToken: "tok123"})
	u, err := sb.DownloadURL("/home/user/a.txt", SignedURLOptions{})
	if err != nil || u != "http://127.0.0.1:3002/_sandboxes/sbid/49983/files?path=%2Fhome%2Fuser%2Fa.txt&signature=v1_byj2OB%2FvujgbES%2F1KAKCaR27E%2B9eOrB6PzeTnIL8L6M" {
		t.Errorf("download url = %s, %v", u, err)
	}
	now := time.Unix(1700000000-60, 0)
	u, err = sb.UploadURL("/home/user/a.txt", SignedURLOptions{User: "user", Expires: time.Minute, Now: now})
	want := "http://127.0.0.1:3002/_sandboxes/sbid/49983/files?path=%2Fhome%2Fuser%2Fa.txt&signature=v1_kCwu4usVZBCSzXHSFPk291ud3zHmpwR9v0nRPaSmYqM&signature_expiration=1700000000&username=user"
	if err != nil || u != want {
		t.Errorf("upload url = %s, %v", u, err)
	}
	open := c.Attach("sbid", AttachParams{})
	if u, err := open.DownloadURL("a", SignedURLOptions{}); err != nil || u != "http://127.0.0.1:3002/_sandboxes/sbid/49983/files?path=a" {
		t.Errorf("unsigned url = %s, %v", u, err)
	}
	if _, err := open.DownloadURL("a", SignedURLOptions{Expires: time.Minute}); err == nil {
		t.Error("expiring URL without a token was accepted")
	}
}
