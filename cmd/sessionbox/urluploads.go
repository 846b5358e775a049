package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// fetchURLs has the service fetch URLs into the sandbox: one line per file
// that landed on stdout, one per URL that did not on stderr, and an error
// unless every URL landed.
func fetchURLs(ctx context.Context, c *client.Client, sid string, args []string) error {
	fl := flag.NewFlagSet("files fetch", flag.ContinueOnError)
	dest := fl.String("dest", "", "sandbox directory the files go to (default /home/user)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() == 0 {
		return errors.New("usage: sessionbox files [--session ID] fetch [--dest DIR] URL [URL ...]")
	}
	res, err := c.UploadURLs(ctx, sid, fl.Args(), *dest)
	if err != nil {
		return err
	}
	for _, u := range res.Uploaded {
		fmt.Printf("%s (%d bytes) from %s\n", u.Path, u.SizeBytes, u.SourceURL)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(os.Stderr, "%s: %s\n", e.SourceURL, e.Error)
	}
	if res.Status != session.URLUploadSuccess {
		return fmt.Errorf("%d of %d URLs failed", len(res.Errors), len(res.Errors)+len(res.Uploaded))
	}
	return nil
}
