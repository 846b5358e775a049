package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// fetchURLs has the service fetch URLs into the sandbox: one line per file
// that landed on stdout, one per URL that did not on stderr, and an error
// unless every URL landed.
func fetchURLs(ctx context.Context, c *client.Client, o *apiFlags, urls []string, dest string) error {
	res, err := c.UploadURLs(ctx, o.session, urls, dest)
	if err != nil {
		return err
	}
	err = o.print(res, func() error {
		for _, u := range res.Uploaded {
			fmt.Printf("%s (%s) from %s\n", u.Path, byteCount(u.SizeBytes), u.SourceURL)
		}
		for _, e := range res.Errors {
			fmt.Fprintf(os.Stderr, "%s: %s\n", e.SourceURL, e.Error)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if res.Status != session.URLUploadSuccess {
		return fmt.Errorf("%d of %d URLs failed", len(res.Errors), len(res.Errors)+len(res.Uploaded))
	}
	return nil
}
