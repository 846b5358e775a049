package main

import (
	"context"
	"fmt"
)

func runCheckpoint(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "checkpoint", synopsis: []string{"[--session ID] [--json]"},
		about: "Saves the session's /home/user to its workspace now; the session needs a live sandbox.", api: true})
	o := fl.apiFlags(true)
	c, err := fl.parseClient(args, o, getenv)
	if err != nil {
		return err
	}
	info, err := c.Checkpoint(ctx, o.session)
	if err != nil {
		return err
	}
	return o.print(info, func() error {
		fmt.Printf("checkpoint of %s at %s: %d files, %s\n", o.session, when(info.At), info.Files, byteCount(info.Bytes))
		return nil
	})
}
