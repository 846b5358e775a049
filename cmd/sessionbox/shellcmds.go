package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

var cmdUsage = usage{
	name: "cmd",
	synopsis: []string{
		"[--session ID] run [--cwd DIR] [--env K=V]... [--timeout SECS] [--user U] -- COMMAND...",
		"[--session ID] bg [--cwd DIR] [--env K=V]... [--timeout SECS] [--user U] -- COMMAND...",
		"[--session ID] ls",
		"[--session ID] attach|status|kill COMMAND_ID",
		"[--session ID] output [--wait SECS] [--follow] COMMAND_ID",
	},
	about: "Shell commands in the session's sandbox, run by bash -l -c (the arguments joined by spaces; put -- before them).\n" +
		"run prints the output as it comes and exits with the command's exit code (124 when it runs past its timeout).\n" +
		"bg starts it in the background and prints its id; its output waits in the sandbox for attach or output.\n" +
		"output prints what the command printed since the last read; once it has ended and all is read, it exits\n" +
		"with the command's code as run does (137 when a signal ended it), else 0 (--json shows running and more).",
	subs: []sub{
		{"run", "run a command to its end, streaming its output"},
		{"bg", "start a command in the background and print its id"},
		{"ls", "list the background commands running"},
		{"attach ID", "print a background command's output until it ends"},
		{"output ID", "print a background command's output since the last read (--follow: until it ends)"},
		{"status ID", "show whether a background command runs, or how it ended"},
		{"kill ID", "kill a background command"},
	},
	api: true,
}

func runCmd(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(cmdUsage)
	o := fl.apiFlags(true)
	cwd := fl.String("cwd", "", "with run and bg: the working `DIR`, absolute or relative to /home/user")
	timeout := fl.Int("timeout", 0, "with run: the time limit in `SECS` (default: the service's); with bg: the process's lifetime (default: none)")
	user := fl.String("user", "", "with run and bg: run as `USER` (user or root)")
	envs := keyValues{}
	fl.Var(&envs, "env", "with run and bg: set `K=V` in the command's environment (repeatable)")
	wait := fl.Int("wait", 0, "with output: wait up to `SECS` (0 to 60) for the command's end; with --follow, per read (default then 30)")
	follow := fl.Bool("follow", false, "with output: read until the command ends")
	args, err := fl.parse(args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fl.misuse("name a subcommand: run, bg, ls, attach, output, status or kill")
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "run", "bg":
		if len(rest) == 0 {
			return fl.misuse("%s: no command given", sub)
		}
	case "ls":
		if err := fl.noArgs(rest); err != nil {
			return err
		}
	case "attach", "status", "kill", "output":
		if len(rest) != 1 {
			return fl.misuse("%s: name one command id", sub)
		}
		if *wait < 0 || *wait > maxOutputWait {
			return fl.misuse("--wait: %d is not 0 to %d seconds", *wait, maxOutputWait)
		}
	default:
		return fl.unknownSub(sub)
	}
	c, err := o.client(getenv)
	if err != nil {
		return err
	}
	line, _ := joinArgs(fl, rest, os.Stdin)
	req := client.CommandRequest{Cmd: line, Cwd: *cwd, Envs: envs, TimeoutSecs: *timeout, User: *user}
	switch sub {
	case "run":
		return cmdRun(ctx, c, o, req)
	case "bg":
		started, err := c.StartCommand(ctx, o.session, req)
		if err != nil {
			return err
		}
		return o.print(started, func() error {
			fmt.Println(started.CommandID)
			return nil
		})
	case "ls":
		list, err := c.Commands(ctx, o.session)
		if err != nil {
			return err
		}
		return o.print(struct {
			Commands []session.CommandInfo `json:"commands"`
		}{list}, func() error { return printCommands(list) })
	case "status":
		info, err := c.CommandStatus(ctx, o.session, rest[0])
		if err != nil {
			return err
		}
		return o.print(info, func() error { return printCommandStatus(info) })
	case "output":
		return cmdOutput(ctx, c, o, rest[0], *wait, *follow)
	case "attach":
		var onEvent func(session.Event)
		if !o.json {
			onEvent = printOutput
		}
		res, err := c.AttachCommand(ctx, o.session, rest[0], onEvent)
		if err != nil {
			return err
		}
		return cmdOutcome(o, res)
	}
	if err := c.KillCommand(ctx, o.session, rest[0]); err != nil {
		return err
	}
	return o.print(map[string]string{"killed": rest[0]}, func() error {
		fmt.Printf("killed %s\n", rest[0])
		return nil
	})
}

func cmdRun(ctx context.Context, c *client.Client, o *apiFlags, req client.CommandRequest) error {
	var onEvent func(session.Event)
	if !o.json {
		onEvent = printOutput
	}
	res, err := c.RunCommand(ctx, o.session, req, onEvent)
	if err != nil {
		return err
	}
	if res.Restarted && !o.json {
		fmt.Fprintln(os.Stderr, "note: the session's sandbox was gone and a fresh one was started")
	}
	return cmdOutcome(o, res)
}

// timedOutExit is the exit code of a command killed at its timeout, as
// coreutils' timeout(1) has it.
const timedOutExit = 124

// remoteExit is the local exit code for a remote one: the same where a
// process can exit with it (1 to 255), else 1. A remote code of 2 is passed
// on too, though the CLI's own misuse is also 2: a script that runs a
// command wants that command's code.
func remoteExit(code int) int {
	if code < 1 || code > 255 {
		return 1
	}
	return code
}

// maxOutputWait is the longest wait of one output read the API takes;
// followWait is a followed read's wait when --wait gives none.
const (
	maxOutputWait = 60
	followWait    = 30
	// signalExit is the exit code of a command a signal ended (the API's
	// -1, which does not say which signal): a shell's for SIGKILL, which
	// a kill sends.
	signalExit = 128 + 9
)

// cmdOutput prints a background command's output since the last read
// and, once it has ended and all is read, fails as the command did. With
// follow it reads until then; under --json it prints the reads merged as
// one document.
func cmdOutput(ctx context.Context, c *client.Client, o *apiFlags, id string, wait int, follow bool) error {
	if follow && wait == 0 {
		wait = followWait
	}
	var all *session.CommandOutput
	for {
		out, err := c.ReadCommandOutput(ctx, o.session, id, time.Duration(wait)*time.Second)
		if err != nil {
			return err
		}
		if !o.json {
			fmt.Fprint(os.Stdout, out.Stdout)
			fmt.Fprint(os.Stderr, out.Stderr)
		}
		all = mergeOutput(all, out)
		if !follow || outputDone(out) {
			break
		}
	}
	if o.json {
		if err := printJSON(os.Stdout, all); err != nil {
			return err
		}
	}
	return outputExit(all)
}

// mergeOutput appends a read to the reads before it: their output joined,
// the rest as the newest read says.
func mergeOutput(all, out *session.CommandOutput) *session.CommandOutput {
	if all == nil {
		return out
	}
	merged := *out
	merged.Stdout = all.Stdout + out.Stdout
	merged.Stderr = all.Stderr + out.Stderr
	return &merged
}

// outputDone says whether a read was the last one with anything to say:
// the command has ended and no output waits.
func outputDone(out *session.CommandOutput) bool {
	return !out.Running && !out.More && out.ExitCode != nil
}

// outputExit is the CLI's outcome once the command's output is all read:
// the command's exit code; nil while it runs or output waits.
func outputExit(out *session.CommandOutput) error {
	switch {
	case !outputDone(out) || *out.ExitCode == 0:
		return nil
	case *out.ExitCode == -1:
		return &exitError{code: signalExit, err: errors.New("a signal ended the command (a kill or its timeout)")}
	}
	return &exitError{code: remoteExit(*out.ExitCode), err: fmt.Errorf("the command exited %d", *out.ExitCode)}
}

// printOutput writes a command's output to ours as it comes.
func printOutput(e session.Event) {
	if e.Stdout != "" {
		fmt.Fprint(os.Stdout, e.Stdout)
	}
	if e.Stderr != "" {
		fmt.Fprint(os.Stderr, e.Stderr)
	}
}

// cmdOutcome prints the result under --json and turns a failed command
// into the CLI's failure.
func cmdOutcome(o *apiFlags, res *session.CommandResult) error {
	if o.json {
		if err := printJSON(os.Stdout, res); err != nil {
			return err
		}
	} else if res.Truncated {
		fmt.Fprintln(os.Stderr, "note: output was truncated")
	}
	switch {
	case res.TimedOut:
		return &exitError{code: timedOutExit, err: errors.New("the command ran past its timeout and was killed")}
	case res.ExitCode != 0:
		return &exitError{code: remoteExit(res.ExitCode), err: fmt.Errorf("the command exited %d", res.ExitCode)}
	}
	return nil
}

func printCommands(list []session.CommandInfo) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMAND ID\tPID\tSTARTED\tCWD\tCMD")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", c.CommandID, c.PID, when(c.StartedAt), c.Cwd, c.Cmd)
	}
	return tw.Flush()
}

func printCommandStatus(info *session.CommandInfo) error {
	if info.Running {
		fmt.Printf("%s running (pid %d, started %s): %s\n", info.CommandID, info.PID, when(info.StartedAt), info.Cmd)
		return nil
	}
	fmt.Printf("%s ended", info.CommandID)
	if r := info.Result; r != nil {
		fmt.Printf(" with exit code %d\n", r.ExitCode)
		fmt.Fprint(os.Stdout, r.Stdout)
		fmt.Fprint(os.Stderr, r.Stderr)
		return nil
	}
	fmt.Println()
	return nil
}
