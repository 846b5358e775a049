package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal"
)

func runtimeCommand() command {
	return command{
		name:    "runtime",
		summary: "serve the local E2B-compatible sandbox runtime",
		run:     runRuntime,
	}
}

// envOr returns the environment variable's value, or def when it is unset.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// envInt is envOr for integers; a malformed value falls back to def.
func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

func runRuntime(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("runtime", flag.ContinueOnError)
	apiAddr := fs.String("api-addr", envOr("E2BLOCAL_API_ADDR", "127.0.0.1:3000"), "control-plane address (E2B_API_URL) [$E2BLOCAL_API_ADDR]")
	sbAddr := fs.String("sandbox-addr", envOr("E2BLOCAL_SANDBOX_ADDR", "127.0.0.1:3002"), "sandbox routing address (E2B_SANDBOX_URL) [$E2BLOCAL_SANDBOX_ADDR]")
	dataDir := fs.String("data-dir", envOr("E2BLOCAL_DATA_DIR", ".data/runtime"), "sandbox data directory [$E2BLOCAL_DATA_DIR]")
	apiKey := fs.String("api-key", envOr("E2BLOCAL_API_KEY", os.Getenv("E2B_API_KEY")), "the X-API-Key callers must send (default: one generated and printed) [$E2BLOCAL_API_KEY, $E2B_API_KEY]")
	uidBase := fs.Int("uid-base", envInt("E2BLOCAL_UID_BASE", 200000), "first host uid for sandboxes when run as root, one per sandbox [$E2BLOCAL_UID_BASE]")
	memMB := fs.Int64("memory-mb", int64(envInt("E2BLOCAL_MEMORY_MB", 512)), "memory limit per sandbox in MiB [$E2BLOCAL_MEMORY_MB]")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	// The control API lists every sandbox with its access token: it takes
	// one key, never any key of the right shape.
	generated := *apiKey == ""
	if generated {
		key, err := e2blocal.NewAPIKey()
		if err != nil {
			return err
		}
		*apiKey = key
	}
	rt, err := e2blocal.Start(ctx, e2blocal.Config{
		APIAddr: *apiAddr, SandboxAddr: *sbAddr, DataDir: *dataDir, APIKey: *apiKey,
		UIDBase: *uidBase, MemoryBytes: *memMB << 20,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2blocal runtime ready\n  E2B_API_URL=%s\n  E2B_SANDBOX_URL=%s\n", rt.APIURL(), rt.SandboxURL())
	if generated {
		fmt.Fprintf(os.Stderr, "  E2B_API_KEY=%s\n", *apiKey)
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
