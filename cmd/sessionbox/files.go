package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

var filesUsage = usage{
	name: "files",
	synopsis: []string{
		"[--session ID] put LOCAL [REMOTE]",
		"[--session ID] get REMOTE [LOCAL | -]",
		"[--session ID] ls [--depth N] [DIR]",
		"[--session ID] rm [--force] PATH...",
		"[--session ID] fetch [--dest DIR] URL...",
	},
	about: "Moves files in and out of the session's sandbox. Sandbox paths are relative to /home/user unless absolute.\n" +
		"Transfers over a few MB show a progress bar when stderr is a terminal.",
	subs: []sub{
		{"put LOCAL [REMOTE]", "upload a local file, or a directory's files (REMOTE defaults to its name in /home/user)"},
		{"get REMOTE [LOCAL]", "download a file (LOCAL defaults to its name here; - writes to stdout); a failed download leaves no file"},
		{"ls [DIR]", "list a directory (default /home/user); a session without a sandbox lists its last checkpoint"},
		{"rm PATH...", "remove files or directory trees; a path that is not there fails the command unless --force"},
		{"fetch URL...", "have the service download URLs into the sandbox"},
	},
	api: true,
}

func runFiles(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(filesUsage)
	o := fl.apiFlags(true)
	depth := fl.Int("depth", 1, "with ls: list `N` levels deep")
	force := fl.Bool("force", false, "with rm: ignore paths that are not there, as rm -f does")
	dest := fl.String("dest", "", "with fetch: the sandbox `DIR` the files go to (default /home/user)")
	args, err := fl.parse(args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fl.misuse("name a subcommand: put, get, ls, rm or fetch")
	}
	sub, rest := args[0], args[1:]
	argc := map[string][2]int{"put": {1, 2}, "get": {1, 2}, "ls": {0, 1}, "rm": {1, -1}, "fetch": {1, -1}}
	n, ok := argc[sub]
	switch {
	case !ok:
		return fl.unknownSub(sub)
	case len(rest) < n[0] || (n[1] >= 0 && len(rest) > n[1]):
		return fl.misuse("wrong number of arguments to %s", sub)
	}
	c, err := o.client(getenv)
	if err != nil {
		return err
	}
	switch sub {
	case "put":
		return putFile(ctx, c, o, rest[0], orDefault(rest, 1, filepath.Base(rest[0])))
	case "get":
		return getFile(ctx, c, o, rest[0], orDefault(rest, 1, path.Base(rest[0])))
	case "ls":
		return listFiles(ctx, c, o, orDefault(rest, 0, "/home/user"), *depth)
	case "rm":
		return removeFiles(ctx, c, o, rest, *force)
	}
	return fetchURLs(ctx, c, o, rest, *dest)
}

// orDefault is args[i], or def when there are not that many.
func orDefault(args []string, i int, def string) string {
	if len(args) > i {
		return args[i]
	}
	return def
}

// putFile uploads local to remote; a directory goes with every regular file
// below it, each to the same relative path under remote.
func putFile(ctx context.Context, c *client.Client, o *apiFlags, local, remote string) error {
	st, err := os.Stat(local)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		e, err := putOne(ctx, c, o, local, remote)
		if err != nil {
			return err
		}
		return o.print(e, func() error {
			fmt.Printf("%s (%s)\n", e.Path, byteCount(e.Size))
			return nil
		})
	}
	var entries []*session.FileEntry
	err = filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(local, p)
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			fmt.Fprintf(os.Stderr, "skipped %s: not a regular file\n", p)
			return nil
		}
		e, err := putOne(ctx, c, o, p, path.Join(remote, filepath.ToSlash(rel)))
		if err != nil {
			return fmt.Errorf("put %s: %w", p, err)
		}
		entries = append(entries, e)
		if !o.json {
			fmt.Printf("%s (%s)\n", e.Path, byteCount(e.Size))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(os.Stdout, struct {
			Entries []*session.FileEntry `json:"entries"`
		}{entries})
	}
	if len(entries) == 0 {
		fmt.Fprintf(os.Stderr, "%s has no files: nothing was uploaded\n", local)
	}
	return nil
}

// putOne uploads one local file, with a progress bar for large ones.
func putOne(ctx context.Context, c *client.Client, o *apiFlags, local, remote string) (*session.FileEntry, error) {
	f, err := os.Open(local)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	bar := progress(st.Size(), "put "+filepath.Base(local))
	e, err := c.Upload(ctx, o.session, remote, countReader(f, bar), st.Size())
	finish(bar, err)
	return e, err
}

// getFile downloads remote to local ("-" for stdout, a directory for the
// file's name in it). The bytes go to a hidden file beside local, renamed
// into place once whole: a failed download leaves nothing behind, nor
// damages a file that was there.
func getFile(ctx context.Context, c *client.Client, o *apiFlags, remote, local string) error {
	body, size, src, err := c.OpenDownloadFrom(ctx, o.session, remote)
	if err != nil {
		return err
	}
	defer body.Close()
	if src.Workspace {
		noteSaved(src.CheckpointAt)
	}
	if local != "-" {
		if st, err := os.Stat(local); err == nil && st.IsDir() {
			local = filepath.Join(local, path.Base(remote))
		}
	}
	bar := progress(size, "get "+path.Base(remote))
	if local == "-" {
		_, err := io.Copy(countWriter(os.Stdout, bar), body)
		finish(bar, err)
		return err
	}
	n, err := writeAtomically(local, countReader(body, bar), size)
	finish(bar, err)
	if err != nil {
		return err
	}
	out := struct {
		Path      string `json:"path"`
		SizeBytes int64  `json:"sizeBytes"`
	}{local, n}
	return o.print(out, func() error {
		fmt.Fprintf(os.Stderr, "%s (%s)\n", local, byteCount(n))
		return nil
	})
}

// writeAtomically copies r into a new file at dst through a temporary file
// in the same directory, synced and renamed into place only when the copy
// is whole (want bytes, unless want is negative).
func writeAtomically(dst string, r io.Reader, want int64) (n int64, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.part")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if n, err = io.Copy(tmp, r); err != nil {
		return n, fmt.Errorf("download: %w", err)
	}
	if want >= 0 && n != want {
		return n, fmt.Errorf("download: got %d of %d bytes", n, want)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return n, err
	}
	if err = tmp.Sync(); err != nil {
		return n, err
	}
	if err = tmp.Close(); err != nil {
		return n, err
	}
	return n, os.Rename(tmp.Name(), dst)
}

func listFiles(ctx context.Context, c *client.Client, o *apiFlags, dir string, depth int) error {
	l, err := c.ListDir(ctx, o.session, dir, depth)
	if err != nil {
		return err
	}
	return o.print(l, func() error {
		if l.Source == "workspace" && l.CheckpointAt != nil {
			noteSaved(*l.CheckpointAt)
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		for _, e := range l.Entries {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Type, byteCount(e.Size), e.ModifiedAt.Local().Format("2006-01-02 15:04"), e.Path)
		}
		return tw.Flush()
	})
}

// noteSaved tells, on stderr so output stays clean, that the session had no
// sandbox and the files shown are those of its last checkpoint.
func noteSaved(at time.Time) {
	fmt.Fprintf(os.Stderr, "the session has no sandbox: files as checkpointed at %s\n", at.Local().Format("2006-01-02 15:04:05"))
}

// removeFiles removes each path, as rm does: a path that is not there is
// said so and makes the command fail (exit 1) after the others are
// removed, unless force. The API's delete succeeds for a missing path, as
// E2B's does, so the parent's listing tells whether it was there.
func removeFiles(ctx context.Context, c *client.Client, o *apiFlags, paths []string, force bool) error {
	removed, missing := []string{}, []string{}
	for _, p := range paths {
		there := true
		if !force {
			var err error
			if there, err = remoteExists(ctx, c, o.session, p); err != nil {
				return fmt.Errorf("remove %s: %w", p, err)
			}
		}
		if err := c.DeleteFile(ctx, o.session, p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
		switch {
		case !there:
			missing = append(missing, p)
			if !o.json {
				fmt.Fprintf(os.Stderr, "%s: no such file or directory\n", p)
			}
		default:
			removed = append(removed, p)
			if !o.json {
				fmt.Printf("removed %s\n", p)
			}
		}
	}
	if o.json {
		if err := printJSON(os.Stdout, struct {
			Removed []string `json:"removed"`
			Missing []string `json:"missing"`
		}{removed, missing}); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d of %d paths were not there (--force to ignore)", len(missing), len(paths))
	}
	return nil
}

// remoteExists tells whether p is in the sandbox: its parent's listing
// names it. A parent that is not there (404) means p is not either; a
// session that is not there is the delete's to report.
func remoteExists(ctx context.Context, c *client.Client, sessionID, p string) (bool, error) {
	abs := path.Clean(p)
	if !path.IsAbs(abs) {
		abs = path.Join(session.WorkDir, abs)
	}
	entries, err := c.ListFiles(ctx, sessionID, path.Dir(abs), 1)
	var prob *client.Problem
	switch {
	case errors.As(err, &prob) && prob.Status == http.StatusNotFound:
		return false, nil
	case err != nil:
		return false, err
	}
	for _, e := range entries {
		if path.Clean(e.Path) == abs {
			return true, nil
		}
	}
	return false, nil
}
