package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/sessionbox/sessionbox/pkg/client"
)

// clientCommands are the commands that call a running API. Each command
// group lives in its own file and builds its flags with newFlags (cli.go).
func clientCommands() []command {
	return []command{
		{name: "exec", summary: "run Python in a session's sandbox, streaming its output", run: withEnv(runExec)},
		{name: "install", summary: "pip-install packages into a session's sandbox", run: withEnv(runInstall)},
		{name: "files", summary: "put, get, list, remove or fetch files of a session's sandbox", run: withEnv(runFiles)},
		{name: "runs", summary: "submit code to run in the background, and get its result", run: withEnv(runRuns)},
		{name: "sessions", summary: "list your sessions", run: withEnv(runSessions)},
		{name: "start", summary: "start a session's sandbox, with its template and options", run: withEnv(runStart)},
		{name: "status", summary: "show a session: its state, sandbox and deadlines", run: withEnv(runStatus)},
		{name: "stop", summary: "stop a session's sandbox (its files are checkpointed first)", run: withEnv(runStop)},
		{name: "reset", summary: "restart a session's Python kernel: variables go, files stay", run: withEnv(runReset)},
		{name: "checkpoint", summary: "save a session's files to its workspace now", run: withEnv(runCheckpoint)},
		{name: "rm", summary: "delete sessions, their sandboxes and their workspaces", run: withEnv(runRemove)},
		{name: "metrics", summary: "show the CPU, memory and disk use of a session's sandbox", run: withEnv(runMetrics)},
		{name: "contexts", summary: "create, list, reset or delete a session's interpreter contexts", run: withEnv(runContexts)},
		{name: "cmd", summary: "run shell commands in a session's sandbox, in the foreground or the background", run: withEnv(runCmd)},
	}
}

// withEnv gives a client command the process environment, which only
// the client's construction reads.
func withEnv(run func(context.Context, []string, func(string) string) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error { return run(ctx, args, os.Getenv) }
}

// client is a client of the API at --url, else SESSIONBOX_URL, with the key
// of SESSIONBOX_API_KEY.
func (o *apiFlags) client(getenv func(string) string) (*client.Client, error) {
	return newClient(o.url, getenv)
}

// newClient takes the API's key from SESSIONBOX_API_KEY only: a key given
// as a flag would show in ps. The URL may come from a flag, which wins.
// Both go through envFlags, which reads every variable of the binary.
func newClient(url string, getenv func(string) string) (*client.Client, error) {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	u := fs.String("url", defaultURL, "the API's base URL")
	key := fs.String("api-key", "", "an API key")
	vars := map[string]string{"api-key": "SESSIONBOX_API_KEY"}
	if url != "" {
		*u = url
	} else {
		vars["url"] = "SESSIONBOX_URL"
	}
	if err := envFlags(fs, getenv, vars); err != nil {
		return nil, err
	}
	if *key == "" {
		return nil, errors.New("set SESSIONBOX_API_KEY (`sessionbox serve` prints one)")
	}
	return client.New(*u, *key, nil), nil
}

// describe is the message for an error of a command: an API that cannot be
// reached says where it was looked for and what to do.
func describe(err error) string {
	var unreachable *client.UnreachableError
	if errors.As(err, &unreachable) {
		return fmt.Sprintf("cannot reach sessionbox at %s: %s — is `sessionbox serve` running? set SESSIONBOX_URL",
			unreachable.URL, unreachable.Reason())
	}
	return err.Error()
}
