package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
)

func runSessions(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "sessions", synopsis: []string{"[--json]"},
		about: "Lists your sessions, newest activity first as the service orders them.", api: true})
	o := fl.apiFlags(false)
	c, err := fl.parseClient(args, o, getenv)
	if err != nil {
		return err
	}
	all := []client.SessionView{}
	for cursor := ""; ; {
		page, next, err := c.Sessions(ctx, 100, cursor)
		if err != nil {
			return err
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	return o.print(struct {
		Sessions []client.SessionView `json:"sessions"`
	}{all}, func() error {
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tSTATE\tSANDBOX\tLAST ACTIVITY")
		for _, s := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.SessionID, s.State, dash(s.SandboxID), ago(s.LastActivityAt))
		}
		return tw.Flush()
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ago is a moment as a short relative time ("5m ago"), for tables.
func ago(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return relative(time.Since(*t))
}

// whenPtr is when for an optional time.
func whenPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return when(*t)
}

// printSession shows one session, a field a line.
func printSession(s *client.SessionView) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("session", s.SessionID)
	row("state", s.State)
	row("sandbox", dash(s.SandboxID))
	if s.Template != "" {
		row("template", s.Template)
	}
	row("created", whenPtr(s.CreatedAt))
	row("last activity", whenPtr(s.LastActivityAt))
	if s.IdleDeadline != nil {
		action := "stopped"
		if s.PauseOnIdle {
			action = "paused"
		}
		row("idle until", whenPtr(s.IdleDeadline)+", then "+action)
	}
	if s.LifetimeDeadline != nil {
		row("lifetime ends", whenPtr(s.LifetimeDeadline))
	}
	if s.Persist != nil && !*s.Persist {
		row("workspace", "none (files are lost when the sandbox goes)")
	} else if cp := s.LastCheckpoint; cp != nil {
		row("checkpoint", fmt.Sprintf("%s: %d files, %s", when(cp.At), cp.Files, byteCount(cp.Bytes)))
	}
	if s.CheckpointProblem != "" {
		row("checkpoint problem", s.CheckpointProblem)
	}
	if r := s.Restored; r != nil {
		row("restored", fmt.Sprintf("%d files, %s from the checkpoint of %s", r.Files, byteCount(r.Bytes), when(r.CheckpointAt)))
	}
	if len(s.Metadata) > 0 {
		var kv []string
		for k, v := range s.Metadata {
			kv = append(kv, k+"="+v)
		}
		row("metadata", strings.Join(sortedCopy(kv), " "))
	}
	return tw.Flush()
}

func runStatus(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "status", synopsis: []string{"[--session ID] [--json]"},
		about: "Shows a session: its state, its sandbox, when it goes idle and its last checkpoint.", api: true})
	o := fl.apiFlags(true)
	return sessionCall(ctx, fl, o, args, getenv, func(c *client.Client) (*client.SessionView, error) {
		return c.Status(ctx, o.session)
	})
}

func runStop(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "stop", synopsis: []string{"[--session ID] [--json]"},
		about: "Stops the session's sandbox after checkpointing its files; the next call starts a fresh one and restores them.", api: true})
	o := fl.apiFlags(true)
	return sessionCall(ctx, fl, o, args, getenv, func(c *client.Client) (*client.SessionView, error) {
		return c.Stop(ctx, o.session)
	})
}

func runStart(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "start", synopsis: []string{"[--session ID] [--template T] [--idle-timeout SECS] [--pause] [--no-workspace] [--env K=V]... [--meta K=V]..."},
		about: "Starts the session's sandbox now, with these settings (a running sandbox is left as it is). Other calls start one on demand.", api: true})
	o := fl.apiFlags(true)
	var opts client.StartOptions
	fl.StringVar(&opts.Template, "template", "", "the sandbox's `TEMPLATE` (default: the service's)")
	fl.IntVar(&opts.IdleTimeoutSecs, "idle-timeout", 0, "`SECS` idle before the sandbox is stopped or paused (default: the service's)")
	fl.BoolVar(&opts.Pause, "pause", false, "pause the sandbox when idle instead of stopping it")
	noWorkspace := fl.Bool("no-workspace", false, "keep no workspace: files are not checkpointed nor restored")
	envs, meta := keyValues{}, keyValues{}
	fl.Var(envs, "env", "an environment variable of the sandbox, `K=V` (repeatable)")
	fl.Var(meta, "meta", "a metadata entry of the session, `K=V` (repeatable)")
	return sessionCall(ctx, fl, o, args, getenv, func(c *client.Client) (*client.SessionView, error) {
		if len(envs) > 0 {
			opts.Envs = envs
		}
		if len(meta) > 0 {
			opts.Metadata = meta
		}
		if *noWorkspace {
			opts.Persist = new(bool)
		}
		return c.StartSandbox(ctx, o.session, opts)
	})
}

// sessionCall runs a command whose answer is one session: it takes no
// arguments and prints the session.
func sessionCall(ctx context.Context, fl *flags, o *apiFlags, args []string, getenv func(string) string,
	call func(*client.Client) (*client.SessionView, error)) error {
	c, err := fl.parseClient(args, o, getenv)
	if err != nil {
		return err
	}
	s, err := call(c)
	if err != nil {
		return err
	}
	return o.print(s, func() error { return printSession(s) })
}

func runReset(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "reset", synopsis: []string{"[--session ID]"},
		about: "Restarts the session's Python kernel: variables and imports are gone, files and installed packages stay.", api: true})
	o := fl.apiFlags(true)
	c, err := fl.parseClient(args, o, getenv)
	if err != nil {
		return err
	}
	if err := c.Reset(ctx, o.session); err != nil {
		return err
	}
	return o.print(struct {
		SessionID string `json:"sessionId"`
		Reset     bool   `json:"reset"`
	}{o.session, true}, func() error {
		fmt.Printf("reset the kernel of %s\n", o.session)
		return nil
	})
}

func runRemove(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "rm", synopsis: []string{"SESSION..."},
		about: "Deletes each session, its sandbox and its workspace, stopping at the first the service refuses.", api: true})
	o := fl.apiFlags(false)
	args, err := fl.parse(args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fl.misuse("name at least one session")
	}
	c, err := o.client(getenv)
	if err != nil {
		return err
	}
	deleted := []string{}
	for _, sid := range args {
		if err := c.DeleteSession(ctx, sid); err != nil {
			return fmt.Errorf("delete session %s: %w", sid, err)
		}
		deleted = append(deleted, sid)
		if !o.json {
			fmt.Printf("deleted %s\n", sid)
		}
	}
	if o.json {
		return printJSON(os.Stdout, struct {
			Deleted []string `json:"deleted"`
		}{deleted})
	}
	return nil
}
