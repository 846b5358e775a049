package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"time"

	"github.com/sessionbox/sessionbox/pkg/smoke"
)

var smokeUsage = usage{
	name:     "smoke",
	synopsis: []string{"--url URL --key KEY [flags]"},
	about: "Checks a deployment the way its first users will meet it (pkg/smoke): health, the 401/404\n" +
		"problems, a session started, JSON and NDJSON execute, a binary round trip with Accept */*,\n" +
		"a presigned upload from a browser origin, 413 past the inline limit, and with flags a run to\n" +
		"completion, a cell silent past API Gateway's idle timeout and the per-principal 429. It\n" +
		"deletes the session it starts.",
}

func smokeCommand() command {
	return command{
		name:    "smoke",
		summary: "check a deployment end to end (make smoke URL=... KEY=...)",
		run: func(ctx context.Context, args []string) error {
			return runSmoke(ctx, args, os.Getenv, os.Stdout)
		},
	}
}

func runSmoke(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg := smoke.Config{Log: stdout}
	fs := newFlags(smokeUsage)
	fs.StringVar(&cfg.URL, "url", getenv("SESSIONBOX_URL"), "the API's base `URL`, stage included [$SESSIONBOX_URL]")
	fs.StringVar(&cfg.Key, "key", getenv("SESSIONBOX_API_KEY"), "an API `KEY` of the tenant [$SESSIONBOX_API_KEY]")
	fs.StringVar(&cfg.Origin, "origin", "", "an allowed browser `ORIGIN`: problems must carry its CORS headers")
	fs.IntVar(&cfg.InlineLimit, "inline-limit", 4_500_000, "the deployment's inline file limit in `BYTES`")
	fs.BoolVar(&cfg.Runs, "runs", true, "check a run to completion")
	fs.IntVar(&cfg.RateProbe, "rate-probe", 0, "make up to `N` quick calls looking for the per-principal 429 (0: skip)")
	fs.DurationVar(&cfg.SilentCell, "silent-cell", 0, "run a cell silent this `LONG` (e.g. 6m, past API Gateway's idle timeout; 0: skip)")
	args, err := fs.parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(args) > 0 || cfg.URL == "" || cfg.Key == "" {
		return fs.misuse("smoke needs --url and --key and no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute+cfg.SilentCell)
	defer cancel()
	return smoke.Run(ctx, cfg)
}
