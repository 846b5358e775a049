package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
)

var runsUsage = usage{
	name: "runs",
	synopsis: []string{
		"[--session ID] submit [--timeout SECS] [--idempotency-key K] [--wait] CODE... | FILE | -",
		"get [--wait] RUN_ID",
	},
	about: "Runs code in the background: submit queues it and prints the run's id at once; get shows the run,\n" +
		"with its output once it has finished. --wait polls until then; a failed run exits 1.",
	subs: []sub{
		{"submit CODE...", "queue code to run in the session (a FILE runs its code; - reads it from stdin)"},
		{"get RUN_ID", "show a run: its status, times and, once finished, its output"},
	},
	api: true,
}

func runRuns(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(runsUsage)
	o := fl.apiFlags(true)
	timeout := fl.Int("timeout", 0, "with submit: the run's time limit in `SECS` (default: the service's)")
	idem := fl.String("idempotency-key", "", "with submit: a `KEY` that makes a repeated submit return the same run")
	wait := fl.Bool("wait", false, "wait for the run to finish and show its output")
	args, err := fl.parse(args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fl.misuse("name a subcommand: submit or get")
	}
	var runID string
	var c *client.Client
	switch args[0] {
	case "submit":
		code, err := codeArgs(fl, args[1:], os.Stdin)
		if err != nil {
			return err
		}
		if c, err = o.client(getenv); err != nil {
			return err
		}
		acc, err := c.SubmitRun(ctx, o.session, client.RunRequest{Code: code, TimeoutSecs: *timeout, IdempotencyKey: *idem})
		if err != nil {
			return err
		}
		if !*wait {
			return o.print(acc, func() error {
				fmt.Println(acc.RunID)
				return nil
			})
		}
		runID = acc.RunID
	case "get":
		if len(args) != 2 {
			return fl.misuse("get takes one run id")
		}
		if c, err = o.client(getenv); err != nil {
			return err
		}
		runID = args[1]
	default:
		return fl.unknownSub(args[0])
	}
	return showRun(ctx, c, o, runID, *wait)
}

// runPoll is how often --wait asks after a run.
const runPoll = 500 * time.Millisecond

func showRun(ctx context.Context, c *client.Client, o *apiFlags, runID string, wait bool) error {
	var run *client.Run
	var err error
	if wait {
		run, err = c.WaitRun(ctx, runID, runPoll)
	} else {
		run, err = c.GetRun(ctx, runID)
	}
	if err != nil {
		return err
	}
	if err := o.print(run, func() error { return printRun(run) }); err != nil {
		return err
	}
	switch {
	case run.Error != "":
		return fmt.Errorf("run %s failed: %s", run.RunID, run.Error)
	case run.Result != nil:
		return execOutcome(run.Result)
	}
	return nil
}

// printRun shows a run's fields on stderr and its output on stdout and
// stderr, as exec would have.
func printRun(run *client.Run) error {
	tw := tabwriter.NewWriter(os.Stderr, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("run", run.RunID)
	row("session", run.SessionID)
	row("status", string(run.Status))
	row("created", whenPtr(run.CreatedAt))
	if run.StartedAt != nil {
		row("started", whenPtr(run.StartedAt))
	}
	if run.FinishedAt != nil {
		row("finished", whenPtr(run.FinishedAt))
	}
	if run.ResultURL != "" {
		row("result", run.ResultURL+" (until "+whenPtr(run.ResultExpiresAt)+")")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res := run.Result; res != nil {
		fmt.Fprint(os.Stdout, res.Stdout)
		fmt.Fprint(os.Stderr, res.Stderr)
		if res.Error != nil {
			if res.Error.Traceback != "" {
				fmt.Fprintln(os.Stderr, res.Error.Traceback)
			} else {
				fmt.Fprintf(os.Stderr, "%s: %s\n", res.Error.Name, res.Error.Value)
			}
		}
		printExecSummary(res)
	}
	return nil
}
