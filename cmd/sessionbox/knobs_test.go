package main

import (
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/diskspace"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/sessionconfig"
)

// lambdaBase is what the stack sets besides the knobs, so every function's
// Load gets as far as the knobs.
var lambdaBase = map[string]string{"SESSIONBOX_TENANT": "acme", "SESSIONBOX_TABLE": "t", "SESSIONBOX_BUCKET": "b",
	"SESSIONBOX_EVENT_BUS": "bus", "SESSIONBOX_E2B_SECRET_ARN": "arn:secret"}

// TestServeAndFunctionsLoadTheSameKnobs gives serve and every Lambda
// function the same environment: they must read the same session knobs to
// the same values, or both refuse the same malformed values, naming the
// variable and the value. Internet access is the one default that differs,
// and it differs as sessionconfig says: online in Lambda, offline locally.
func TestServeAndFunctionsLoadTheSameKnobs(t *testing.T) {
	t.Parallel()
	every := map[string]string{
		"SESSIONBOX_TEMPLATE": "my-template", "SESSIONBOX_IDLE_TIMEOUT_SECS": "600", "SESSIONBOX_LIFETIME_SECS": " 3600 ",
		"SESSIONBOX_MAX_SANDBOX_LIFETIME_SECS": "86400",
		"SESSIONBOX_EXEC_TIMEOUT_SECS":         "120", "SESSIONBOX_MAX_LIVE_SANDBOXES": "7", "SESSIONBOX_REAP_BATCH": "50",
		"SESSIONBOX_MAX_LIVE_SANDBOXES_PER_PRINCIPAL": "3", "SESSIONBOX_MAX_SANDBOXES_PER_KEY": "100",
		"SESSIONBOX_ALLOW_INTERNET_ACCESS": "false", "SESSIONBOX_MAX_OUTPUT_BYTES": "4096", "SESSIONBOX_MAX_RESULT_BYTES": "65536",
		"SESSIONBOX_ALLOW_PRIVATE_URLS": "true",
		"SESSIONBOX_WORKSPACES":         "false", "SESSIONBOX_MAX_WORKSPACE_BYTES": "5000000", "SESSIONBOX_CHECKPOINT_INTERVAL_SECS": "60",
		"SESSIONBOX_RATE_PER_SECOND": "5", "SESSIONBOX_RATE_BURST": "15",
	}
	for _, k := range sessionconfig.Knobs() {
		if _, ok := every[k.Env]; !ok {
			t.Fatalf("the table does not set the knob %s", k.Env)
		}
	}
	cases := []struct {
		name string
		env  map[string]string
		// want is the knobs both load; Lambda's and serve's internet
		// access when the variable is unset are checked apart.
		want session.Config
		// errs are what the error must name; nil means no error.
		errs []string
	}{
		{name: "nothing set", env: nil, want: session.Config{}},
		{name: "every knob", env: every, want: session.Config{DefaultTemplate: "my-template", IdleTimeout: 10 * time.Minute,
			Lifetime: time.Hour, MaxSandboxLifetime: 24 * time.Hour, ExecTimeout: 2 * time.Minute, MaxLiveSandboxesPerTenant: 7, MaxLiveSandboxesPerPrincipal: 3, MaxSandboxesPerKey: 100, ReapBatch: 50,
			MaxOutputBytes: 4096, MaxResultBytes: 65536, URLUploads: session.URLUploadConfig{AllowPrivate: true},
			DisableWorkspaces: true, MaxWorkspaceBytes: 5_000_000, CheckpointInterval: time.Minute,
			RequestRate: session.RequestRate{PerSecond: 5, Burst: 15}}},
		{name: "malformed workspace cap", env: map[string]string{"SESSIONBOX_MAX_WORKSPACE_BYTES": "1 GiB", "SESSIONBOX_WORKSPACES": "maybe"},
			errs: []string{`SESSIONBOX_MAX_WORKSPACE_BYTES: "1 GiB" is not a positive whole number`, `SESSIONBOX_WORKSPACES: "maybe" is neither true nor false`}},
		{name: "private URLs off", env: map[string]string{"SESSIONBOX_ALLOW_PRIVATE_URLS": "false"}, want: session.Config{}},
		{name: "malformed private URLs", env: map[string]string{"SESSIONBOX_ALLOW_PRIVATE_URLS": "sometimes"},
			errs: []string{`SESSIONBOX_ALLOW_PRIVATE_URLS: "sometimes" is neither true nor false`}},
		{name: "internet on", env: map[string]string{"SESSIONBOX_ALLOW_INTERNET_ACCESS": "true"}, want: session.Config{AllowInternetAccess: true}},
		{name: "internet 1", env: map[string]string{"SESSIONBOX_ALLOW_INTERNET_ACCESS": "1"}, want: session.Config{AllowInternetAccess: true}},
		{name: "internet FALSE", env: map[string]string{"SESSIONBOX_ALLOW_INTERNET_ACCESS": "FALSE"}, want: session.Config{}},
		{name: "malformed internet", env: map[string]string{"SESSIONBOX_ALLOW_INTERNET_ACCESS": "yes please"},
			errs: []string{`SESSIONBOX_ALLOW_INTERNET_ACCESS: "yes please"`}},
		{name: "seconds in words", env: map[string]string{"SESSIONBOX_IDLE_TIMEOUT_SECS": "ten"},
			errs: []string{`SESSIONBOX_IDLE_TIMEOUT_SECS: "ten" is not a positive whole number`}},
		{name: "a duration is not seconds", env: map[string]string{"SESSIONBOX_LIFETIME_SECS": "2h"},
			errs: []string{`SESSIONBOX_LIFETIME_SECS: "2h"`}},
		{name: "zero", env: map[string]string{"SESSIONBOX_EXEC_TIMEOUT_SECS": "0"}, errs: []string{`SESSIONBOX_EXEC_TIMEOUT_SECS: "0"`}},
		{name: "negative", env: map[string]string{"SESSIONBOX_REAP_BATCH": "-1"}, errs: []string{`SESSIONBOX_REAP_BATCH: "-1"`}},
		{name: "fraction", env: map[string]string{"SESSIONBOX_MAX_LIVE_SANDBOXES": "1.5"}, errs: []string{`SESSIONBOX_MAX_LIVE_SANDBOXES: "1.5"`}},
		{name: "exponent", env: map[string]string{"SESSIONBOX_MAX_OUTPUT_BYTES": "1e6"}, errs: []string{`SESSIONBOX_MAX_OUTPUT_BYTES: "1e6"`}},
		{name: "template with a space", env: map[string]string{"SESSIONBOX_TEMPLATE": "my template"}, errs: []string{`SESSIONBOX_TEMPLATE: "my template"`}},
		{name: "every malformed knob is named", env: map[string]string{"SESSIONBOX_MAX_RESULT_BYTES": "lots", "SESSIONBOX_IDLE_TIMEOUT_SECS": "soon"},
			errs: []string{`SESSIONBOX_MAX_RESULT_BYTES: "lots"`, `SESSIONBOX_IDLE_TIMEOUT_SECS: "soon"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string {
				if v, ok := c.env[k]; ok {
					return v
				}
				return lambdaBase[k]
			}
			loaded := map[string]session.Config{}
			check := func(who string, cfg session.Config, err error) {
				t.Helper()
				if c.errs != nil {
					if err == nil {
						t.Fatalf("%s accepted %v", who, c.env)
					}
					for _, want := range c.errs {
						if !strings.Contains(err.Error(), want) {
							t.Fatalf("%s: error %q does not name %s", who, err, want)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("%s: %v", who, err)
				}
				loaded[who] = cfg
			}
			o, err := serveFlags(nil, getenv)
			check("serve", o.session, err)
			for _, fn := range lambdaenv.Functions() {
				lc, err := lambdaenv.Load(getenv, fn.Needs)
				// Tenant and stack are the deployment's identity, not knobs.
				lc.Session.Tenant, lc.Session.StackID = "", ""
				check(fn.Name, lc.Session, err)
			}
			for who, got := range loaded {
				want := c.want
				if _, set := c.env["SESSIONBOX_ALLOW_INTERNET_ACCESS"]; !set {
					want.AllowInternetAccess = who != "serve"
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s loaded %+v\nwant %+v", who, got, want)
				}
			}
		})
	}
}

// TestServeFlagsWinOverEnvironment: serve takes each knob as a flag too; a
// flag given wins over its variable, and a malformed flag is named as such.
func TestServeFlagsWinOverEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SESSIONBOX_IDLE_TIMEOUT_SECS": "600", "SESSIONBOX_ALLOW_INTERNET_ACCESS": "false",
		"SESSIONBOX_TEMPLATE": "from-env", "SESSIONBOX_ADDR": "127.0.0.1:9999", "SESSIONBOX_REAP_INTERVAL": "5s"}
	getenv := func(k string) string { return env[k] }
	o, err := serveFlags([]string{"--idle-timeout-secs", "60", "--internet", "--allow-private-urls", "--addr", "127.0.0.1:7777"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if o.session.IdleTimeout != time.Minute || !o.session.AllowInternetAccess || !o.session.URLUploads.AllowPrivate || o.session.DefaultTemplate != "from-env" ||
		o.addr != "127.0.0.1:7777" || o.reap != 5*time.Second {
		t.Fatalf("options %+v", o)
	}
	for args, want := range map[string]string{
		"--idle-timeout-secs=soon": `--idle-timeout-secs: "soon" is not a positive whole number`,
		"--internet=perhaps":       `--internet: "perhaps" is neither true nor false`,
	} {
		if _, err := serveFlags([]string{args}, getenv); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %s", args, err, want)
		}
	}
	bad := map[string]string{"SESSIONBOX_REAP_INTERVAL": "often", "SESSIONBOX_JSON_LOGS": "sometimes"}
	_, err = serveFlags(nil, func(k string) string { return bad[k] })
	for _, want := range []string{`SESSIONBOX_REAP_INTERVAL: "often"`, `SESSIONBOX_JSON_LOGS: "sometimes"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v does not name %s", err, want)
		}
	}
}

// TestRuntimeVariables: a malformed E2BLOCAL_* value is an error naming it,
// not a silent default; flags win over the variables.
func TestRuntimeVariables(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string // error text; "" means none
		uid  int
		mem  int64
	}{
		{"defaults", nil, nil, "", 200000, 512 << 20},
		{"from the environment", nil, map[string]string{"E2BLOCAL_UID_BASE": "300000", "E2BLOCAL_MEMORY_MB": "1024"}, "", 300000, 1024 << 20},
		{"flag wins", []string{"--memory-mb", "256"}, map[string]string{"E2BLOCAL_MEMORY_MB": "1024"}, "", 200000, 256 << 20},
		{"malformed uid base", nil, map[string]string{"E2BLOCAL_UID_BASE": "lots"}, `E2BLOCAL_UID_BASE: "lots"`, 0, 0},
		{"malformed memory", nil, map[string]string{"E2BLOCAL_MEMORY_MB": "1GiB"}, `E2BLOCAL_MEMORY_MB: "1GiB"`, 0, 0},
		{"negative memory", nil, map[string]string{"E2BLOCAL_MEMORY_MB": "-1"}, "--memory-mb (-1) must be positive", 0, 0},
	}
	keys := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"none: runtime generates one", nil, nil, ""},
		{"the SDKs' variable", nil, map[string]string{"E2B_API_KEY": "e2b_sdk"}, "e2b_sdk"},
		{"the runtime's variable first", nil, map[string]string{"E2B_API_KEY": "e2b_sdk", "E2BLOCAL_API_KEY": "e2b_rt"}, "e2b_rt"},
		{"the flag first", []string{"--api-key", "e2b_flag"}, map[string]string{"E2BLOCAL_API_KEY": "e2b_rt"}, "e2b_flag"},
	}
	for _, k := range keys {
		cfg, err := runtimeFlags(k.args, func(v string) string { return k.env[v] })
		if err != nil || cfg.APIKey != k.want {
			t.Errorf("%s: key %q, %v; want %q", k.name, cfg.APIKey, err, k.want)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := runtimeFlags(c.args, func(k string) string { return c.env[k] })
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err %v, want %s", err, c.want)
				}
				return
			}
			if err != nil || cfg.UIDBase != c.uid || cfg.MemoryBytes != c.mem {
				t.Fatalf("%+v %v", cfg, err)
			}
		})
	}
}

// TestMinFreeFlags: --min-free-mib and its variables reach the floor that
// serve hands the service and runtime checks itself.
func TestMinFreeFlags(t *testing.T) {
	t.Parallel()
	huge := strconv.FormatInt(1<<40, 10) // 1 EiB: more than any disk has free
	for _, c := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantLow bool
	}{
		{"a floor above any free space", nil, map[string]string{"E2BLOCAL_MIN_FREE_MIB": huge}, true},
		{"turned off", nil, map[string]string{"E2BLOCAL_MIN_FREE_MIB": "-1"}, false},
		{"the flag wins", []string{"--min-free-mib", "-1"}, map[string]string{"E2BLOCAL_MIN_FREE_MIB": huge}, false},
	} {
		t.Run("runtime: "+c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := runtimeFlags(append(c.args, "--data-dir", t.TempDir()), func(k string) string { return c.env[k] })
			if err != nil || cfg.SpaceCheck == nil {
				t.Fatalf("%v, space check set: %v", err, cfg.SpaceCheck != nil)
			}
			if err := cfg.SpaceCheck(); errors.Is(err, diskspace.ErrLow) != c.wantLow {
				t.Fatalf("space check: %v, want low %v", err, c.wantLow)
			}
		})
	}
	o, err := serveFlags(nil, func(k string) string { return map[string]string{"SESSIONBOX_MIN_FREE_MIB": "2048"}[k] })
	if err != nil || mibFloor(o.minFreeMiB) != 2048<<20 {
		t.Fatalf("serve: %d MiB, %v", o.minFreeMiB, err)
	}
	if _, err := serveFlags(nil, func(k string) string { return map[string]string{"SESSIONBOX_MIN_FREE_MIB": "1GiB"}[k] }); err == nil ||
		!strings.Contains(err.Error(), "SESSIONBOX_MIN_FREE_MIB") {
		t.Fatalf("a malformed floor: %v", err)
	}
}

// TestWarmPoolFlags: --warm-pool and its variables reach the runtime's
// WarmPool for serve and runtime alike; a malformed value names its
// variable.
func TestWarmPoolFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  string // the command's variable
		want int
		err  bool
	}{
		{"default", nil, "", 0, false},
		{"from the environment", nil, "10", 10, false},
		{"the flag wins", []string{"--warm-pool", "-1"}, "10", -1, false},
		{"malformed", nil, "many", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			serveEnv := map[string]string{"SESSIONBOX_WARM_POOL": c.env}
			o, serr := serveFlags(c.args, func(k string) string { return serveEnv[k] })
			rtEnv := map[string]string{"E2BLOCAL_WARM_POOL": c.env}
			cfg, rerr := runtimeFlags(c.args, func(k string) string { return rtEnv[k] })
			if c.err {
				if serr == nil || !strings.Contains(serr.Error(), "SESSIONBOX_WARM_POOL") || rerr == nil || !strings.Contains(rerr.Error(), "E2BLOCAL_WARM_POOL") {
					t.Fatalf("serve: %v; runtime: %v; want errors naming the variables", serr, rerr)
				}
				return
			}
			if serr != nil || rerr != nil || o.warmPool != c.want || cfg.WarmPool != c.want {
				t.Fatalf("serve %d (%v), runtime %d (%v); want %d", o.warmPool, serr, cfg.WarmPool, rerr, c.want)
			}
		})
	}
}

// TestRuntimePlanFlags: the runtime takes E2B's plan limits and an old API
// from flags or their variables.
func TestRuntimePlanFlags(t *testing.T) {
	t.Parallel()
	cfg, err := runtimeFlags([]string{"--max-sandboxes", "20", "--max-lifetime-secs", "3600", "--old-api", "v1"},
		func(k string) string { return map[string]string{"E2BLOCAL_CREATE_RATE": "1"}[k] })
	if err != nil || cfg.MaxSandboxes != 20 || cfg.MaxLifetime != time.Hour || cfg.CreateRate != 1 || cfg.OldAPI != "v1" {
		t.Fatalf("%+v %v", cfg, err)
	}
	for _, args := range [][]string{{"--old-api", "v0"}, {"--create-rate", "-1"}} {
		if _, err := runtimeFlags(args, func(string) string { return "" }); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestInternetAllowFlag: serve and runtime read the egress allow-list from
// a flag or its variable, and name a malformed prefix.
func TestInternetAllowFlag(t *testing.T) {
	t.Parallel()
	want := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::1/128")}
	env := map[string]string{"SESSIONBOX_INTERNET_ALLOW": "10.1.0.0/16,fd00::1", "E2BLOCAL_INTERNET_ALLOW": "10.1.0.0/16, fd00::1"}
	getenv := func(k string) string { return env[k] }
	o, err := serveFlags(nil, getenv)
	if err != nil || !slices.Equal(o.internetAllow, want) {
		t.Errorf("serve: %v, %v; want %v", o.internetAllow, err, want)
	}
	cfg, err := runtimeFlags(nil, getenv)
	if err != nil || !slices.Equal(cfg.InternetAllow, want) {
		t.Errorf("runtime: %v, %v; want %v", cfg.InternetAllow, err, want)
	}
	if _, err := serveFlags([]string{"--internet-allow", "10.0.0.0/33"}, getenv); err == nil || !strings.Contains(err.Error(), `--internet-allow: "10.0.0.0/33"`) {
		t.Errorf("serve with a bad prefix: %v", err)
	}
	if _, err := runtimeFlags([]string{"--internet-allow", "intranet"}, getenv); err == nil || !strings.Contains(err.Error(), `--internet-allow: "intranet"`) {
		t.Errorf("runtime with a bad prefix: %v", err)
	}
}
