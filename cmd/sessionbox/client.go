package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func clientCommands() []command {
	return []command{
		{name: "exec", summary: "run Python in a session's sandbox, streaming its output", run: withEnv(runExec)},
		{name: "files", summary: "put, get or list files of a session's sandbox", run: withEnv(runFiles)},
		{name: "sessions", summary: "list your sessions", run: withEnv(runSessions)},
		{name: "checkpoint", summary: "save a session's files to its workspace now", run: withEnv(runCheckpoint)},
		{name: "rm", summary: "delete sessions, their sandboxes and their workspaces", run: withEnv(runRemove)},
	}
}

// withEnv gives a client command the process environment, which only
// apiClient reads.
func withEnv(run func(context.Context, []string, func(string) string) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error { return run(ctx, args, os.Getenv) }
}

// apiClient takes the API's URL and key from SESSIONBOX_URL and
// SESSIONBOX_API_KEY. They are not command-line flags (a key there would
// show in ps), so they fill a flag set of their own, read through envFlags
// like every other variable.
func apiClient(getenv func(string) string) (*client.Client, error) {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8080", "the API's base URL")
	key := fs.String("api-key", "", "an API key")
	if err := envFlags(fs, getenv, map[string]string{"url": "SESSIONBOX_URL", "api-key": "SESSIONBOX_API_KEY"}); err != nil {
		return nil, err
	}
	if *key == "" {
		return nil, errors.New("set SESSIONBOX_API_KEY (`sessionbox serve` prints one)")
	}
	return client.New(*url, *key, nil), nil
}

func runExec(ctx context.Context, args []string, getenv func(string) string) error {
	fl := flag.NewFlagSet("exec", flag.ContinueOnError)
	sid := fl.String("session", "default", "session id")
	timeout := fl.Int("timeout", 0, "execution time limit in seconds (default: the service's)")
	once := fl.Bool("once", false, "run in a fresh sandbox of its own, killed afterwards, instead of a session")
	template := fl.String("template", "", "with --once: the sandbox's template (default: the service's)")
	fl.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: sessionbox exec [--session ID | --once [--template T]] [--timeout SECS] CODE | -   (- reads the code from stdin)")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	code, err := codeArg(fl.Args())
	if err != nil {
		fl.Usage()
		return err
	}
	c, err := apiClient(getenv)
	if err != nil {
		return err
	}
	var res *session.ExecResult
	if *once {
		res, err = c.ExecuteOnce(ctx, client.OnceRequest{Code: code, TimeoutSecs: *timeout, Template: *template}, printEvent)
	} else {
		res, err = c.Execute(ctx, *sid, client.ExecuteRequest{Code: code, TimeoutSecs: *timeout}, printEvent)
	}
	if err != nil {
		return err
	}
	for _, r := range res.Results {
		if r.IsMainResult && r.Text != "" {
			fmt.Println(r.Text)
		}
	}
	for _, a := range res.Artifacts {
		fmt.Fprintf(os.Stderr, "artifact: %s (%d bytes) %s\n", a.Path, a.SizeBytes, a.DownloadURL)
	}
	if res.Restarted {
		fmt.Fprintln(os.Stderr, "note: the session's sandbox was gone and a fresh one was started; earlier variables are lost")
	}
	if r := res.Restored; r != nil {
		fmt.Fprintf(os.Stderr, "note: %d files (%d bytes) were restored from the checkpoint of %s\n", r.Files, r.Bytes, r.CheckpointAt.Format(time.RFC3339))
	}
	if res.Truncated {
		fmt.Fprintln(os.Stderr, "note: output was truncated")
	}
	if res.TimedOut {
		return errors.New("the code ran past its timeout")
	}
	if !res.Success {
		return errors.New("the code raised an exception")
	}
	return nil
}

func codeArg(args []string) (string, error) {
	switch {
	case len(args) == 1 && args[0] == "-":
		b, err := io.ReadAll(os.Stdin)
		return string(b), err
	case len(args) >= 1:
		return strings.Join(args, " "), nil
	}
	return "", errors.New("no code given")
}

func printEvent(e session.Event) {
	switch {
	case e.Stdout != "":
		fmt.Fprint(os.Stdout, e.Stdout)
	case e.Stderr != "":
		fmt.Fprint(os.Stderr, e.Stderr)
	case e.Error != nil:
		if e.Error.Traceback != "" {
			fmt.Fprintln(os.Stderr, e.Error.Traceback)
		} else {
			fmt.Fprintf(os.Stderr, "%s: %s\n", e.Error.Name, e.Error.Value)
		}
	case e.Result != nil && !e.Result.IsMainResult:
		fmt.Fprintf(os.Stderr, "[display: %s]\n", resultKinds(e.Result))
	}
}

func resultKinds(r *session.Result) string {
	var kinds []string
	for name, present := range map[string]bool{"text": r.Text != "", "html": r.HTML != "", "png": r.PNG != "",
		"svg": r.SVG != "", "jpeg": r.JPEG != "", "markdown": r.Markdown != "", "json": r.JSON != nil} {
		if present {
			kinds = append(kinds, name)
		}
	}
	return strings.Join(kinds, ",")
}

func runFiles(ctx context.Context, args []string, getenv func(string) string) error {
	usage := errors.New("usage: sessionbox files [--session ID] put LOCAL REMOTE | get REMOTE LOCAL | ls [DIR] | fetch [--dest DIR] URL [URL ...]")
	fl := flag.NewFlagSet("files", flag.ContinueOnError)
	sid := fl.String("session", "default", "session id")
	if err := fl.Parse(args); err != nil {
		return err
	}
	rest := fl.Args()
	if len(rest) == 0 {
		return usage
	}
	c, err := apiClient(getenv)
	if err != nil {
		return err
	}
	switch {
	case rest[0] == "put" && len(rest) == 3:
		return putFile(ctx, c, *sid, rest[1], rest[2])
	case rest[0] == "get" && len(rest) == 3:
		return getFile(ctx, c, *sid, rest[1], rest[2])
	case rest[0] == "ls" && len(rest) <= 2:
		dir := "/home/user"
		if len(rest) == 2 {
			dir = rest[1]
		}
		return listFiles(ctx, c, *sid, dir)
	case rest[0] == "fetch":
		return fetchURLs(ctx, c, *sid, rest[1:])
	}
	return usage
}

func putFile(ctx context.Context, c *client.Client, sid, local, remote string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	e, err := c.Upload(ctx, sid, remote, f, st.Size())
	if err != nil {
		return err
	}
	fmt.Printf("%s (%d bytes)\n", e.Path, e.Size)
	return nil
}

func getFile(ctx context.Context, c *client.Client, sid, remote, local string) error {
	out := os.Stdout
	if local != "-" {
		f, err := os.Create(local)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	n, err := c.Download(ctx, sid, remote, out)
	if err != nil {
		return err
	}
	if local == "-" {
		// A pipe or terminal cannot be synced (EINVAL), nor needs to be.
		return nil
	}
	fmt.Fprintf(os.Stderr, "%s (%d bytes)\n", local, n)
	return out.Sync()
}

func listFiles(ctx context.Context, c *client.Client, sid, dir string) error {
	entries, err := c.ListFiles(ctx, sid, dir, 1)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", e.Type, e.Size, e.ModifiedAt.Format("2006-01-02 15:04"), e.Path)
	}
	return tw.Flush()
}

func runSessions(ctx context.Context, args []string, getenv func(string) string) error {
	fl := flag.NewFlagSet("sessions", flag.ContinueOnError)
	if err := fl.Parse(args); err != nil {
		return err
	}
	c, err := apiClient(getenv)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATE\tSANDBOX\tLAST ACTIVITY")
	cursor := ""
	for {
		page, next, err := c.Sessions(ctx, 100, cursor)
		if err != nil {
			return err
		}
		for _, s := range page {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.SessionID, s.State, s.SandboxID, s.LastActivityAt)
		}
		if next == "" {
			return tw.Flush()
		}
		cursor = next
	}
}
