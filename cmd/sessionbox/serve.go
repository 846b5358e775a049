package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func serveCommand() command {
	return command{
		name:    "serve",
		summary: "serve the whole API locally, with embedded stand-ins for AWS and E2B",
		run:     runServe,
	}
}

func runServe(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fl.String("addr", envOr("SESSIONBOX_ADDR", "127.0.0.1:8080"), "API listen address [$SESSIONBOX_ADDR]")
	dataDir := fl.String("data-dir", envOr("SESSIONBOX_DATA_DIR", ".data"), "state directory: sandbox homes, transfers, the generated key [$SESSIONBOX_DATA_DIR]")
	keysEnv := fl.String("api-keys", os.Getenv("SESSIONBOX_API_KEYS"), "comma-separated API keys, each [principal=]sbx_...; default: one generated key [$SESSIONBOX_API_KEYS]")
	reap := fl.Duration("reap-interval", 30*time.Second, "how often idle sandboxes are paused or killed")
	jsonLogs := fl.Bool("json-logs", false, "log JSON lines instead of text")
	internet := fl.Bool("internet", false, "let sandboxes reach the internet (pip from PyPI); needs root and slirp4netns [$SESSIONBOX_ALLOW_INTERNET_ACCESS=true]")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if v := os.Getenv("SESSIONBOX_ALLOW_INTERNET_ACCESS"); v != "" && !flagSet(fl, "internet") {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("SESSIONBOX_ALLOW_INTERNET_ACCESS: %q is neither true nor false", v)
		}
		*internet = on
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fl.Args())
	}
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	keys, generated, err := serveKeys(*keysEnv, dir)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *jsonLogs {
		logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	svc, err := local.Start(ctx, local.Config{Addr: *addr, DataDir: dir, Keys: keys, ReapInterval: *reap, Logger: logger,
		Session: session.Config{AllowInternetAccess: *internet}})
	if err != nil {
		return err
	}
	printWelcome(os.Stderr, svc.URL, keys, generated, *internet)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "sessionbox: shutting down, killing sandboxes")
	return svc.Close()
}

// serveKeys returns the keys to accept: those given, or one generated on
// first start and kept in the data dir, so restarts keep working clients.
func serveKeys(given, dataDir string) (keys []local.Key, generated bool, err error) {
	if strings.TrimSpace(given) != "" {
		keys, err = local.ParseKeys(given)
		return keys, false, err
	}
	path := filepath.Join(dataDir, "api-key")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		keys, err = local.ParseKeys(strings.TrimSpace(string(b)))
		return keys, true, err
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	k, err := local.NewKey("local")
	if err != nil {
		return nil, false, err
	}
	if err := os.WriteFile(path, []byte("local="+k.Secret+"\n"), 0o600); err != nil {
		return nil, false, fmt.Errorf("keep the generated key: %w", err)
	}
	return []local.Key{k}, true, nil
}

// printWelcome tells the user how to call the service. It shows a key only
// when serve made it: keys given through SESSIONBOX_API_KEYS or --api-keys
// are the operator's secrets, and the banner often ends up in logs.
func printWelcome(w io.Writer, url string, keys []local.Key, generated, internet bool) {
	fmt.Fprintf(w, "\nsessionbox is serving on %s\n\n", url)
	key := "$SESSIONBOX_API_KEY"
	if generated {
		key = keys[0].Secret
		fmt.Fprintf(w, "API key (principal %q):\n  %s\n\n", keys[0].Principal, key)
	} else {
		fmt.Fprintf(w, "%d API key(s) from SESSIONBOX_API_KEYS or --api-keys (not shown)\n\n", len(keys))
	}
	fmt.Fprintf(w, "Try it:\n  curl -s -X POST %s/v1/sessions/demo/execute \\\n    -H \"Authorization: Bearer %s\" \\\n    -H 'Content-Type: application/json' \\\n    -d '{\"code\": \"import sys; print(sys.version); 6 * 7\"}'\n\n", url, key)
	if generated {
		fmt.Fprintf(w, "Or the client in this binary:\n  export SESSIONBOX_URL=%s SESSIONBOX_API_KEY=%s\n  sessionbox exec --session demo 'print(\"hello\")'\n\n", url, key)
	} else {
		fmt.Fprintf(w, "Or the client in this binary:\n  export SESSIONBOX_URL=%s SESSIONBOX_API_KEY=<one of your keys>\n  sessionbox exec --session demo 'print(\"hello\")'\n\n", url)
	}
	if !internet {
		fmt.Fprintf(w, "Sandboxes are offline; serve with --internet (as root, with slirp4netns) to let them reach the internet.\n\n")
	}
}

// flagSet reports whether name was given on the command line.
func flagSet(fl *flag.FlagSet, name string) (set bool) {
	fl.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
