package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/sessionbox/sessionbox/pkg/client"
)

var contextsUsage = usage{
	name: "contexts",
	synopsis: []string{
		"[--session ID] create [--language L] [--cwd DIR]",
		"[--session ID] ls",
		"[--session ID] reset|rm CONTEXT_ID...",
	},
	about: "Interpreter contexts are kernels of their own beside the session's default one, each with its own\n" +
		"variables and working directory; run code in one with `sessionbox exec --context ID`. A context lives in the\n" +
		"session's current sandbox: once that is stopped or replaced, the context is gone.",
	subs: []sub{
		{"create", "start a context (starting the sandbox if needed) and print its id"},
		{"ls", "list the contexts of the session's sandbox"},
		{"reset ID...", "clear each context's variables"},
		{"rm ID...", "delete each context"},
	},
	api: true,
}

func runContexts(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(contextsUsage)
	o := fl.apiFlags(true)
	lang := fl.String("language", "", "with create: the context's `LANGUAGE` (default python)")
	cwd := fl.String("cwd", "", "with create: its working `DIR`, absolute or relative to /home/user (default /home/user)")
	args, err := fl.parse(args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fl.misuse("name a subcommand: create, ls, reset or rm")
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "create", "ls":
		if err := fl.noArgs(rest); err != nil {
			return err
		}
	case "reset", "rm":
		if len(rest) == 0 {
			return fl.misuse("%s: name at least one context", sub)
		}
	default:
		return fl.unknownSub(sub)
	}
	c, err := o.client(getenv)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		cc, err := c.CreateContext(ctx, o.session, *lang, *cwd)
		if err != nil {
			return err
		}
		return o.print(cc, func() error {
			fmt.Println(cc.ContextID)
			return nil
		})
	case "ls":
		list, err := c.Contexts(ctx, o.session)
		if err != nil {
			return err
		}
		return o.print(struct {
			Contexts []client.CodeContext `json:"contexts"`
		}{list}, func() error { return printContexts(list) })
	}
	return contextsEach(ctx, c, o, sub, rest)
}

func printContexts(list []client.CodeContext) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tLANGUAGE\tCWD\tCREATED")
	for _, cc := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cc.ContextID, cc.Language, cc.Cwd, when(cc.CreatedAt))
	}
	return tw.Flush()
}

// contextsEach resets or deletes each named context, stopping at the first
// the service refuses; --json prints the ids done.
func contextsEach(ctx context.Context, c *client.Client, o *apiFlags, sub string, ids []string) error {
	done := []string{}
	verb := "reset"
	for _, id := range ids {
		var err error
		if sub == "reset" {
			err = c.ResetContext(ctx, o.session, id)
		} else {
			err, verb = c.DeleteContext(ctx, o.session, id), "deleted"
		}
		if err != nil {
			return fmt.Errorf("contexts %s %s: %w", sub, id, err)
		}
		done = append(done, id)
		if !o.json {
			fmt.Printf("%s %s\n", verb, id)
		}
	}
	if o.json {
		return printJSON(os.Stdout, map[string][]string{verb: done})
	}
	return nil
}
