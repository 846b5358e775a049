package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func runExec(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{
		name:     "exec",
		synopsis: []string{"[--session ID] [--context ID] [--timeout SECS] [--save-images DIR] CODE...", "[flags] FILE   (runs the file's code)", "[flags] -   (reads the code from stdin)", "--once [--template T] CODE..."},
		about: "Runs Python in the session's kernel (started on first use), printing its output as it comes.\n" +
			"The arguments are joined by spaces; flags may come before or after them (use -- before code that starts with -).\n" +
			"One argument that names a local file runs that file's code (pipe the text through - to run it as code instead).\n" +
			"Exits 1 when the code raised or ran past its timeout.",
		api: true,
	})
	o := fl.apiFlags(true)
	timeout := fl.Int("timeout", 0, "execution time limit in `SECS` (default: the service's)")
	once := fl.Bool("once", false, "run in a fresh sandbox of its own, killed afterwards, instead of a session")
	template := fl.String("template", "", "with --once: the sandbox's `TEMPLATE` (default: the service's)")
	saveDir := fl.String("save-images", "", "write each PNG or JPEG result into `DIR` and print its path")
	execCtx := fl.String("context", "", "run in the interpreter context `ID` (sessionbox contexts create) instead of the default one")
	args, err := fl.parse(args)
	if err != nil {
		return err
	}
	if err := execFlagsAgree(fl, *once); err != nil {
		return err
	}
	code, err := codeArgs(fl, args, os.Stdin)
	if err != nil {
		return err
	}
	c, err := o.client(getenv)
	if err != nil {
		return err
	}
	// Paths go to stdout among the output, or to stderr beside --json's.
	images := &imageSaver{dir: *saveDir, out: os.Stdout}
	if o.json {
		images.out = os.Stderr
	}
	// --json prints the API's one answer; otherwise output streams.
	var onEvent func(session.Event)
	if !o.json {
		onEvent = func(e session.Event) { printEvent(e, images) }
	}
	var res *session.ExecResult
	if *once {
		res, err = c.ExecuteOnce(ctx, client.OnceRequest{Code: code, TimeoutSecs: *timeout, Template: *template}, onEvent)
	} else {
		res, err = c.Execute(ctx, o.session, client.ExecuteRequest{Code: code, TimeoutSecs: *timeout, Context: *execCtx}, onEvent)
	}
	if err != nil {
		return err
	}
	if o.json {
		for i := range res.Results {
			images.save(&res.Results[i])
		}
		if err := printJSON(os.Stdout, res); err != nil {
			return err
		}
	} else {
		printExecSummary(res)
	}
	if err := images.err; err != nil {
		return err
	}
	return execOutcome(res)
}

// execFlagsAgree refuses flags that do not go together: --once runs in no
// session, and only --once picks a template.
func execFlagsAgree(fl *flags, once bool) error {
	given := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range []string{"session", "context"} {
		if once && given[name] {
			return fl.misuse("--%s and --once do not go together: --once runs in a sandbox of its own", name)
		}
	}
	if !once && given["template"] {
		return fl.misuse("--template goes with --once; a session's template is set by `sessionbox start --template`")
	}
	return nil
}

// printExecSummary prints what the stream did not: the main result's text
// and notes about the sandbox.
func printExecSummary(res *session.ExecResult) {
	for _, r := range res.Results {
		if r.IsMainResult && r.Text != "" {
			fmt.Println(r.Text)
		}
	}
	for _, a := range res.Artifacts {
		fmt.Fprintf(os.Stderr, "artifact: %s (%s) %s\n", a.Path, byteCount(a.SizeBytes), a.DownloadURL)
	}
	if res.Restarted {
		fmt.Fprintln(os.Stderr, "note: the session's sandbox was gone and a fresh one was started; earlier variables are lost")
	}
	if r := res.Restored; r != nil {
		fmt.Fprintf(os.Stderr, "note: %d files (%s) were restored from the checkpoint of %s\n", r.Files, byteCount(r.Bytes), when(r.CheckpointAt))
	}
	if res.Truncated {
		fmt.Fprintln(os.Stderr, "note: output was truncated")
	}
}

// execOutcome is the command's error for a result that failed.
func execOutcome(res *session.ExecResult) error {
	if res.TimedOut {
		return errors.New("the code ran past its timeout")
	}
	if !res.Success {
		return errors.New("the code raised an exception")
	}
	return nil
}

func printEvent(e session.Event, images *imageSaver) {
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
	case e.Result != nil:
		saved := images.save(e.Result)
		if !e.Result.IsMainResult && len(saved) == 0 {
			fmt.Fprintf(os.Stderr, "[display: %s]\n", resultKinds(e.Result))
		}
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
	sort.Strings(kinds)
	return strings.Join(kinds, ",")
}

// imageSaver writes the PNG and JPEG results of an execution into dir, one
// new file each (result-1.png, result-2.jpeg, …, numbered past those
// already there, which are never overwritten), and prints each path to
// out. With no dir it does nothing.
type imageSaver struct {
	dir string
	out io.Writer
	n   int
	err error // the first failure; later images are still tried
}

// save writes r's images and returns their paths.
func (s *imageSaver) save(r *session.Result) []string {
	if s.dir == "" {
		return nil
	}
	var paths []string
	for _, img := range []struct{ ext, b64 string }{{"png", r.PNG}, {"jpeg", r.JPEG}} {
		if img.b64 == "" {
			continue
		}
		p, err := s.write(img.ext, img.b64)
		if err != nil {
			s.err = errors.Join(s.err, err)
			continue
		}
		fmt.Fprintln(s.out, p)
		paths = append(paths, p)
	}
	return paths
}

func (s *imageSaver) write(ext, b64 string) (string, error) {
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", fmt.Errorf("a %s result is not base64: %w", ext, err)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return "", fmt.Errorf("--save-images: %w", err)
	}
	for {
		s.n++
		// A number is taken once any image of that number is there.
		if taken, _ := filepath.Glob(filepath.Join(s.dir, fmt.Sprintf("result-%d.*", s.n))); len(taken) > 0 {
			continue
		}
		p := filepath.Join(s.dir, fmt.Sprintf("result-%d.%s", s.n, ext))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("--save-images: %w", err)
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(p)
			return "", fmt.Errorf("--save-images: %w", err)
		}
		return p, nil
	}
}

// when is a time for people: RFC 3339 in local time and how long ago (or
// how far ahead) it is.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339) + " (" + relative(time.Since(t)) + ")"
}

// relative is a duration since (positive) or until (negative) a moment, in
// its largest unit.
func relative(d time.Duration) string {
	suffix := "ago"
	if d < 0 {
		d, suffix = -d, "from now"
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds %s", int(d.Seconds()), suffix)
	case d < time.Hour:
		return fmt.Sprintf("%dm %s", int(d.Minutes()), suffix)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %s", int(d.Hours()), suffix)
	}
	return fmt.Sprintf("%dd %s", int(d.Hours()/24), suffix)
}

// byteCount is a size for people: 512 bytes, 1.5 KiB, 24.0 MiB.
func byteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
