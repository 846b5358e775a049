package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

func runCheckpoint(ctx context.Context, args []string, getenv func(string) string) error {
	fl := flag.NewFlagSet("checkpoint", flag.ContinueOnError)
	sid := fl.String("session", "default", "session id")
	fl.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: sessionbox checkpoint [--session ID]   (saves the session's /home/user now)")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 0 {
		fl.Usage()
		return errors.New("checkpoint takes no arguments")
	}
	c, err := apiClient(getenv)
	if err != nil {
		return err
	}
	info, err := c.Checkpoint(ctx, *sid)
	if err != nil {
		return err
	}
	fmt.Printf("checkpoint of %s at %s: %d files, %d bytes\n", *sid, info.At.Format(time.RFC3339), info.Files, info.Bytes)
	return nil
}

func runRemove(ctx context.Context, args []string, getenv func(string) string) error {
	fl := flag.NewFlagSet("rm", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: sessionbox rm SESSION...   (deletes each session, its sandbox and its workspace)")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() == 0 {
		fl.Usage()
		return errors.New("name at least one session")
	}
	c, err := apiClient(getenv)
	if err != nil {
		return err
	}
	for _, sid := range fl.Args() {
		if err := c.DeleteSession(ctx, sid); err != nil {
			return fmt.Errorf("delete session %s: %w", sid, err)
		}
		fmt.Printf("deleted %s\n", sid)
	}
	return nil
}
