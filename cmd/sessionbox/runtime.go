package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/diskspace"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/netpolicy"
)

func runtimeCommand() command {
	return command{
		name:    "runtime",
		summary: "serve the local E2B-compatible sandbox runtime",
		run:     func(ctx context.Context, args []string) error { return runRuntime(ctx, args, os.Getenv) },
	}
}

// runtimeFlags reads the runtime's flags and their E2BLOCAL_* variables.
func runtimeFlags(args []string, getenv func(string) string) (e2blocal.Config, error) {
	fs := newFlags(usage{name: "runtime", synopsis: []string{"[flags]"},
		about: "Serves the local E2B-compatible sandbox runtime: E2B's SDKs reach it through E2B_API_URL and E2B_SANDBOX_URL.\n" +
			"Every flag has an environment variable, named in brackets; a flag given wins."})
	apiAddr := fs.String("api-addr", "127.0.0.1:3000", "control-plane address (E2B_API_URL) [$E2BLOCAL_API_ADDR]")
	sbAddr := fs.String("sandbox-addr", "127.0.0.1:3002", "sandbox routing address (E2B_SANDBOX_URL) [$E2BLOCAL_SANDBOX_ADDR]")
	dataDir := fs.String("data-dir", ".data/runtime", "sandbox data directory [$E2BLOCAL_DATA_DIR]")
	apiKey := fs.String("api-key", "", "the X-API-Key callers must send (default: one generated and printed) [$E2BLOCAL_API_KEY, $E2B_API_KEY]")
	uidBase := fs.Int("uid-base", 200000, "first host uid for sandboxes when run as root, one per sandbox [$E2BLOCAL_UID_BASE]")
	memMB := fs.Int64("memory-mb", 512, "memory limit per sandbox in MiB [$E2BLOCAL_MEMORY_MB]")
	warmPool := fs.Int("warm-pool", 0, warmPoolUsage+" [$E2BLOCAL_WARM_POOL]")
	agent := fs.String("agent", "", agentUsage+" [$E2BLOCAL_AGENT]")
	// E2B's plan limits, to try a deployment against them (E2B's Base
	// plan: --max-sandboxes 20 --max-lifetime-secs 3600 --create-rate 1).
	maxSandboxes := fs.Int("max-sandboxes", 0, "live sandboxes at once, past it creates get E2B's 429; 0 is 500 [$E2BLOCAL_MAX_SANDBOXES]")
	maxLifetime := fs.Int("max-lifetime-secs", 0, "longest sandbox timeout granted, longer asks get E2B's 400; 0 is 24 h [$E2BLOCAL_MAX_LIFETIME_SECS]")
	createRate := fs.Float64("create-rate", 0, "creates per second, past it E2B's 429 with Retry-After; 0 is no cap [$E2BLOCAL_CREATE_RATE]")
	oldAPI := fs.String("old-api", "", "serve an older E2B's control plane: v1 (no /v2 create and connect) or resume (no connect either) [$E2BLOCAL_OLD_API]")
	templates := templateFlag{}
	fs.Var(templates, "template", "`NAME=DEFINITION`: a template creates may name beside base and code-interpreter-v1; DEFINITION is one of those two, to run as it, or the path of a JSON file (root filesystem dir, startCmd, readyCmd, envs, workdir, user; docs/e2b-compatibility.md); repeatable, comma-separated in the variable [$E2BLOCAL_TEMPLATES]")
	allow := fs.String("internet-allow", "", internetAllowUsage+" [$E2BLOCAL_INTERNET_ALLOW]")
	minFree := fs.Int64("min-free-mib", 0, "free space kept on the data dir's file system: below it creates and uploads get 507; 0 is 1 GiB (or 5% of a smaller file system), negative turns it off [$E2BLOCAL_MIN_FREE_MIB]")
	diskMiB := fs.Int("disk-mib", 0, "size of each sandbox's home image (as root): a create is admitted only while every home growing to this size would leave --min-free-mib free, else 507; 0 is 10240, E2B's [$E2BLOCAL_DISK_MIB]")
	rest, err := fs.parse(args)
	if err != nil {
		return e2blocal.Config{}, err
	}
	if len(rest) > 0 {
		return e2blocal.Config{}, fs.misuse("unexpected arguments: %v", rest)
	}
	if err := envFlags(fs.FlagSet, getenv, map[string]string{"api-addr": "E2BLOCAL_API_ADDR", "sandbox-addr": "E2BLOCAL_SANDBOX_ADDR",
		"data-dir": "E2BLOCAL_DATA_DIR", "api-key": "E2BLOCAL_API_KEY", "uid-base": "E2BLOCAL_UID_BASE",
		"memory-mb": "E2BLOCAL_MEMORY_MB", "min-free-mib": "E2BLOCAL_MIN_FREE_MIB", "warm-pool": "E2BLOCAL_WARM_POOL",
		"agent": "E2BLOCAL_AGENT", "max-sandboxes": "E2BLOCAL_MAX_SANDBOXES", "max-lifetime-secs": "E2BLOCAL_MAX_LIFETIME_SECS",
		"create-rate": "E2BLOCAL_CREATE_RATE", "old-api": "E2BLOCAL_OLD_API", "template": "E2BLOCAL_TEMPLATES",
		"internet-allow": "E2BLOCAL_INTERNET_ALLOW", "disk-mib": "E2BLOCAL_DISK_MIB"}); err != nil {
		return e2blocal.Config{}, err
	}
	if *apiKey == "" {
		// The key clients of the runtime already hold, as the SDKs read it.
		*apiKey = getenv("E2B_API_KEY")
	}
	if *uidBase <= 0 || *memMB <= 0 {
		return e2blocal.Config{}, fmt.Errorf("--uid-base (%d) and --memory-mb (%d) must be positive", *uidBase, *memMB)
	}
	if *maxSandboxes < 0 || *maxLifetime < 0 || *createRate < 0 {
		return e2blocal.Config{}, fmt.Errorf("--max-sandboxes (%d), --max-lifetime-secs (%d) and --create-rate (%g) must not be negative", *maxSandboxes, *maxLifetime, *createRate)
	}
	if *oldAPI != "" && *oldAPI != e2blocal.OldAPIV1 && *oldAPI != e2blocal.OldAPIResume {
		return e2blocal.Config{}, fmt.Errorf("--old-api %q: want %s or %s", *oldAPI, e2blocal.OldAPIV1, e2blocal.OldAPIResume)
	}
	prefixes, err := netpolicy.ParseAllow(*allow)
	if err != nil {
		return e2blocal.Config{}, fmt.Errorf("--internet-allow: %w", err)
	}
	floor := diskspace.Floor{Dir: *dataDir, MinFree: mibFloor(*minFree)}
	return e2blocal.Config{InternetAllow: prefixes, APIAddr: *apiAddr, SandboxAddr: *sbAddr, DataDir: *dataDir, APIKey: *apiKey,
		UIDBase: *uidBase, MemoryBytes: *memMB << 20, SpaceCheck: floor.Check, HomeFloor: &floor, DiskMB: *diskMiB, WarmPool: *warmPool, Agent: *agent,
		MaxSandboxes: *maxSandboxes, MaxLifetime: time.Duration(*maxLifetime) * time.Second, CreateRate: *createRate,
		OldAPI: *oldAPI, Templates: templates}, nil
}

// internetAllowUsage describes --internet-allow, the same for serve and runtime.
const internetAllowUsage = "comma-separated `CIDR`s sandboxes with internet access may reach although private, link-local, CGNAT or otherwise refused (by default they reach public addresses only)"

// warmPoolUsage describes --warm-pool, the same for serve and runtime.
const warmPoolUsage = "sandbox trees kept spawned at rest, each ~22 MB RSS (~7 MB PSS) while it waits (~32 MB when this binary is the agent): a burst of new sandboxes beyond them spawns the rest on demand, ~60 ms of CPU each; 0 is 2, negative keeps none (after a burst the pool grows to it, up to 10, for ten minutes)"

func runRuntime(ctx context.Context, args []string, getenv func(string) string) error {
	cfg, err := runtimeFlags(args, getenv)
	if err != nil {
		return err
	}
	agent, err := agentFor(cfg.Agent)
	if err != nil {
		return err
	}
	if agent.warning != "" {
		slog.Warn(agent.warning)
	}
	cfg.Agent = agent.path
	// The control API lists every sandbox with its access token: it takes
	// one key, never any key of the right shape.
	generated := cfg.APIKey == ""
	if generated {
		if cfg.APIKey, err = e2blocal.NewAPIKey(); err != nil {
			return err
		}
	}
	rt, err := e2blocal.Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2blocal runtime ready\n  E2B_API_URL=%s\n  E2B_SANDBOX_URL=%s\n", rt.APIURL(), rt.SandboxURL())
	if generated {
		fmt.Fprintf(os.Stderr, "  E2B_API_KEY=%s\n", cfg.APIKey)
	}
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "e2blocal runtime: shutting down, killing sandboxes")
	done := make(chan error, 1)
	go func() { done <- rt.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("shutdown timed out")
	}
}

// mibFloor turns a --min-free-mib value into diskspace.Floor's MinFree:
// 0 stays the default, negative stays off.
func mibFloor(mib int64) int64 {
	if mib < 0 {
		return -1
	}
	return mib << 20
}

// templateFlag is --template NAME=BUILTIN or NAME=FILE, repeatable; a comma-separated
// list in one value (the variable's form) adds each.
type templateFlag keyValues

func (f templateFlag) String() string { return keyValues(f).String() }

func (f templateFlag) Set(v string) error {
	for _, one := range strings.Split(v, ",") {
		if err := keyValues(f).Set(strings.TrimSpace(one)); err != nil {
			return err
		}
	}
	return nil
}
