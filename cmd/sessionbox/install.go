package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func runInstall(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "install", synopsis: []string{"[--session ID] [--index-url URL] PACKAGE..."},
		about: "pip-installs packages (names with optional version specifiers, e.g. 'pandas>=2') into the session's sandbox,\n" +
			"streaming pip's output to stderr. Exits 1 when pip failed.", api: true})
	o := fl.apiFlags(true)
	index := fl.String("index-url", "", "a package index `URL` to use instead of PyPI")
	args, err := fl.parse(args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fl.misuse("name at least one package")
	}
	c, err := o.client(getenv)
	if err != nil {
		return err
	}
	var res *session.InstallResult
	if o.json {
		res, err = c.Install(ctx, o.session, args, *index)
	} else {
		// pip's output streams to stderr as it comes; stdout says what
		// was installed.
		res, err = c.InstallStream(ctx, o.session, args, *index, func(e session.Event) {
			fmt.Fprint(os.Stderr, e.Stdout, e.Stderr)
		})
	}
	if err != nil {
		return err
	}
	view := installView{res.Success, res.ExitCode, res.Stdout, res.Stderr, res.DurationMs, res.Truncated, res.Restarted, res.Restored}
	err = o.print(view, func() error {
		if res.Restarted {
			fmt.Fprintln(os.Stderr, "note: the session's sandbox was gone and a fresh one was started; earlier variables are lost")
		}
		if res.Success {
			fmt.Printf("installed %s in %.1fs\n", strings.Join(args, " "), float64(res.DurationMs)/1000)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !res.Success {
		return fmt.Errorf("pip exited %d", res.ExitCode)
	}
	return nil
}

// installView is an install's result as the API answers it.
type installView struct {
	Success    bool                 `json:"success"`
	ExitCode   int                  `json:"exitCode"`
	Stdout     string               `json:"stdout"`
	Stderr     string               `json:"stderr"`
	DurationMs int64                `json:"durationMs"`
	Truncated  bool                 `json:"truncated"`
	Restarted  bool                 `json:"restarted"`
	Restored   *session.RestoreInfo `json:"restored,omitempty"`
}
