package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/netpolicy"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/sessionconfig"
)

func serveCommand() command {
	return command{
		name:    "serve",
		summary: "serve the whole API locally, with embedded stand-ins for AWS and E2B",
		run:     func(ctx context.Context, args []string) error { return runServe(ctx, args, os.Getenv) },
	}
}

// serveOptions is what serve runs with, read once from its flags and the
// environment.
type serveOptions struct {
	addr, dataDir, apiKeys string
	// origins are the browser origins CORS admits; none means any.
	origins    []string
	reap       time.Duration
	minFreeMiB int64
	diskMiB    int
	warmPool   int
	agent      string // --agent as given; agentFor resolves it
	// internetAllow opens these prefixes to sandboxes with --internet.
	internetAllow []netip.Prefix
	jsonLogs      bool
	// templates are the runtime's templates beside the built-in ones, as
	// `sessionbox runtime --template` takes them.
	templates templateFlag
	// session holds the knobs, read by the loader the Lambda functions use.
	session session.Config
}

func serveFlags(args []string, getenv func(string) string) (serveOptions, error) {
	var o serveOptions
	fl := newFlags(usage{name: "serve", synopsis: []string{"[flags]"},
		about: "Serves the whole API on --addr with embedded stand-ins for AWS and E2B: sessions run in local sandboxes.\n" +
			"Every flag has an environment variable, named in brackets; a flag given wins."})
	fl.StringVar(&o.addr, "addr", "127.0.0.1:8080", "API listen address [$SESSIONBOX_ADDR]")
	fl.StringVar(&o.dataDir, "data-dir", ".data", "state directory: sandbox homes, transfers, the generated key [$SESSIONBOX_DATA_DIR]")
	fl.StringVar(&o.apiKeys, "api-keys", "", "comma-separated API keys, each [principal=]sbx_...; default: one generated key [$SESSIONBOX_API_KEYS]")
	var origins string
	fl.StringVar(&origins, "allowed-origins", "", "comma-separated browser origins (scheme://host[:port]) CORS admits; default: any origin, without credentials [$SESSIONBOX_ALLOWED_ORIGINS]")
	fl.DurationVar(&o.reap, "reap-interval", 30*time.Second, "how often idle sandboxes are paused or killed [$SESSIONBOX_REAP_INTERVAL]")
	fl.Int64Var(&o.minFreeMiB, "min-free-mib", 0, "free space kept on the data dir's file system: below it requests that start a sandbox or store an upload get 507; 0 is 1 GiB (or 5% of a smaller file system), negative turns it off [$SESSIONBOX_MIN_FREE_MIB]")
	fl.IntVar(&o.diskMiB, "sandbox-disk-mib", 0, "size of each sandbox's home image (as root): a new sandbox starts only while every home growing to this size would leave --min-free-mib free on the file system the homes are on, else 507; 0 is 2048 [$SESSIONBOX_SANDBOX_DISK_MIB]")
	fl.IntVar(&o.warmPool, "warm-pool", 0, warmPoolUsage+" [$SESSIONBOX_WARM_POOL]")
	fl.StringVar(&o.agent, "agent", "", agentUsage+" [$SESSIONBOX_AGENT]")
	var allow string
	fl.StringVar(&allow, "internet-allow", "", internetAllowUsage+" [$SESSIONBOX_INTERNET_ALLOW]")
	fl.BoolVar(&o.jsonLogs, "json-logs", false, "log JSON lines instead of text [$SESSIONBOX_JSON_LOGS]")
	knobs := sessionconfig.AddFlags(fl.FlagSet)
	o.templates = templateFlag{}
	shareTemplateFlag(fl.FlagSet, o.templates)
	rest, err := fl.parse(args)
	if err != nil {
		return serveOptions{}, err
	}
	if len(rest) > 0 {
		return serveOptions{}, fl.misuse("unexpected arguments: %v", rest)
	}
	err = envFlags(fl.FlagSet, getenv, map[string]string{"addr": "SESSIONBOX_ADDR", "data-dir": "SESSIONBOX_DATA_DIR",
		"api-keys": "SESSIONBOX_API_KEYS", "reap-interval": "SESSIONBOX_REAP_INTERVAL", "json-logs": "SESSIONBOX_JSON_LOGS",
		"min-free-mib": "SESSIONBOX_MIN_FREE_MIB", "allowed-origins": "SESSIONBOX_ALLOWED_ORIGINS", "warm-pool": "SESSIONBOX_WARM_POOL",
		"agent": "SESSIONBOX_AGENT", "internet-allow": "SESSIONBOX_INTERNET_ALLOW", "sandbox-disk-mib": "SESSIONBOX_SANDBOX_DISK_MIB"})
	err = errors.Join(err, runtimeTemplatesFromEnv(o.templates, getenv))
	var oerr, aerr error
	o.origins, oerr = parseOrigins(origins)
	if o.internetAllow, aerr = netpolicy.ParseAllow(allow); aerr != nil {
		aerr = fmt.Errorf("--internet-allow: %w", aerr)
	}
	err = errors.Join(err, oerr, aerr)
	if o.reap <= 0 {
		err = errors.Join(err, fmt.Errorf("--reap-interval %s is not a positive duration", o.reap))
	}
	var kerr error
	o.session, kerr = sessionconfig.Load(knobs.Over(sessionconfig.FromEnv(getenv)), sessionconfig.Local)
	if err = errors.Join(err, kerr); err != nil {
		return serveOptions{}, err
	}
	return o, nil
}

func runServe(ctx context.Context, args []string, getenv func(string) string) error {
	o, err := serveFlags(args, getenv)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	keys, generated, err := serveKeys(o.apiKeys, dir)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if o.jsonLogs {
		logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	agent, err := agentFor(o.agent)
	if err != nil {
		return err
	}
	if agent.warning != "" {
		logger.Warn(agent.warning)
	}
	svc, err := local.Start(ctx, local.Config{Addr: o.addr, DataDir: dir, Keys: keys, ReapInterval: o.reap, Logger: logger,
		Session: o.session, MinFreeBytes: mibFloor(o.minFreeMiB), AllowedOrigins: o.origins,
		Runtime: e2blocal.Config{WarmPool: o.warmPool, Agent: agent.path, Templates: o.templates, InternetAllow: o.internetAllow, DiskMB: o.diskMiB}})
	if err != nil {
		return err
	}
	if o.jsonLogs {
		logWelcome(logger, svc.URL, keys, generated, o.session.AllowInternetAccess)
	} else {
		printWelcome(os.Stderr, svc.URL, keys, generated, o.session.AllowInternetAccess)
	}
	<-ctx.Done()
	logger.Info("sessionbox: shutting down, killing sandboxes")
	return svc.Close()
}

// parseOrigins reads --allowed-origins: origins as a browser sends them in
// Origin (scheme, host, optional port; nothing after), or "*" for any.
func parseOrigins(list string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(list, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o != "*" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
				u.Path != "" || u.RawQuery != "" || u.Fragment != "" || o != u.Scheme+"://"+u.Host {
				return nil, fmt.Errorf("--allowed-origins: %q is not an origin: want scheme://host[:port], e.g. http://localhost:5173", o)
			}
		}
		out = append(out, o)
	}
	return out, nil
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
	fmt.Fprintf(w, "Playground: open %s/ in a browser and paste the API key.\n\n", url)
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

// logWelcome is printWelcome for --json-logs, whose output is all JSON
// records: the same facts as attributes, the key only when serve made it.
func logWelcome(log *slog.Logger, url string, keys []local.Key, generated, internet bool) {
	attrs := []any{"url", url, "playground", url + "/", "keys", len(keys), "internet", internet}
	if generated {
		attrs = append(attrs, "principal", keys[0].Principal, "apiKey", keys[0].Secret)
	}
	log.Info("sessionbox is serving", attrs...)
}
