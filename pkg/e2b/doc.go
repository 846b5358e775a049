// Package e2b is a Go client for E2B (https://e2b.dev) sandboxes: the
// control-plane REST API, envd (files and processes inside a sandbox) and
// the code interpreter. It speaks the same wire protocols as E2B's official
// JavaScript and Python SDKs and has no other dependency than connect-go
// and protobuf.
//
// # Configuration
//
// A Client is configured by its Config alone: New reads no environment
// variable. ConfigFromEnv reads the official SDKs' variables, for programs
// that want to be configured like them:
//
//	E2B_API_KEY      API key (X-API-Key)
//	E2B_DOMAIN       domain, default e2b.app
//	E2B_API_URL      control-plane URL, default https://api.<domain>
//	E2B_SANDBOX_URL  one URL for all sandbox traffic (local or self-hosted E2B)
//	E2B_DEBUG        "true": a single local envd on localhost:49983
//
// Sandbox traffic goes to E2B_SANDBOX_URL when set, else to
// https://sandbox.<domain> (E2B's own domains) or https://<port>-<id>.<domain>;
// the E2b-Sandbox-Id, E2b-Sandbox-Port and X-Access-Token headers are always
// sent so any E2B proxy can route it.
//
// # Usage
//
//	cfg, err := e2b.ConfigFromEnv() // or e2b.Config{APIKey: ..., Domain: ...}
//	client, err := e2b.New(cfg)
//	sb, err := client.Create(ctx, e2b.CreateParams{Template: "code-interpreter-v1"})
//	defer sb.Kill(context.WithoutCancel(ctx))
//	exec, err := sb.RunCode(ctx, "1 + 1", e2b.RunCodeOptions{})
//	fmt.Println(exec.Text()) // 2
//
// Files are streamed in both directions: Filesystem.Read returns an
// io.ReadCloser fed by the network, Filesystem.Write consumes an io.Reader
// as it uploads. Commands.Run runs a shell command and waits; Commands.Start
// returns a CommandHandle that keeps reading output in the background and can
// be disconnected and reattached with Commands.Connect.
//
// # Output held in memory
//
// envd and the code interpreter put no cap on output, so the client does:
// a command handle keeps the first Config.MaxOutputBytes (16 MiB by default)
// of each of stdout and stderr, an execution the first MaxOutputBytes of its
// logs and of its results, and CommandResult.Truncated or
// Execution.Truncated says when something was dropped. The live callbacks
// (OnStdout, OnStderr, OnResult, ...) still receive every chunk, so callers
// that need all of a large output should consume it there. Each call can
// override the limit; a negative limit keeps everything.
//
// # Errors
//
// Failures are *Error values. Classify them with errors.Is against
// ErrNotFound, ErrSandboxNotFound, ErrTimeout, ErrRateLimited,
// ErrAuthentication, ErrInvalidArgument, ErrNotEnoughSpace, ErrUnavailable,
// ErrConflict, ErrAlreadyExists, ErrOutputTooLarge and ErrUnsupported, and read status,
// code, message and RetryAfter with errors.As. Exceptions raised by executed code are not Go
// errors: they are in Execution.Error. A command that exits non-zero returns
// its result together with a *CommandExitError.
//
// # envd versions
//
// Like the official SDKs, the client reads the envd version a sandbox
// reports and uses only what that envd has: Create kills a sandbox whose
// envd predates 0.1.0 and fails with ErrUnsupported; before 0.4.0, which
// has no default user, calls that name no user name "user"; CloseStdin
// (0.5.2), recursive watches (0.1.4) and Sandbox.Metrics (0.1.5) fail with
// ErrUnsupported, without a request, on older ones. A sandbox attached
// without a version counts as current.
//
// # Retries and timeouts
//
// Idempotent calls (get, list, kill, set timeout, connect, metrics, file
// reads, stat, list dir, process list, context list) are retried with
// exponential backoff and jitter on 429 (honouring Retry-After), 502, 503,
// 504 and reset connections, at most Config.Retry.MaxAttempts times and
// never past the context's deadline. Calls with side effects that cannot be
// repeated safely — Pause, Commands.Start/Run, RunCode, uploads — are sent
// exactly once. Create is repeated only on 429, which E2B answers before it
// makes anything (its create rate: 1/s on Base, 5/s on Pro; its concurrent
// sandboxes: 20 on Base), with the same backoff, at least Retry-After, for
// at most Config.Retry.MaxRateLimitWait in all and never past the context's
// deadline.
//
// # Older E2B control planes
//
// Create and Connect use POST /v2/sandboxes and /v2/sandboxes/{id}/connect,
// as the current SDKs do. A self-hosted E2B that predates them answers 404
// or 405; the client then uses POST /sandboxes (with secure: true, so the
// sandbox is secured as v2's are) and /sandboxes/{id}/connect, or, older
// still, the deprecated /sandboxes/{id}/resume (409 for a running sandbox,
// which then gets its timeout set and its details read). What worked is
// remembered for the Client's life (Client.APILevels); see apilevel.go.
//
// Every call takes a context.Context. Config.RequestTimeout bounds each
// request, and for streams only the wait for the first response; the
// lifetime of a command is its CommandOptions.Timeout (enforced by envd, so
// it survives a client disconnect) and that of a code execution is
// RunCodeOptions.Timeout.
//
// The Client owns one http.Transport with keep-alive and sized connection
// pools shared by all sandboxes; reuse one Client and Close it at the end.
package e2b
