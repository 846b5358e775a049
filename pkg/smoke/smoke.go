// Package smoke is a day-one check of any sessionbox deployment: the
// README's first calls and what a first week meets (JSON and NDJSON
// execute, binary round trips with fetch's Accept, a presigned upload from
// a browser origin (CORS preflight and PUT), 413 at the inline limit,
// a run to completion, the 401/403/404/429 problems), made over plain HTTP
// as a client would. `sessionbox smoke` runs it against a URL and key; the
// tests run it against local serve and against the functions behind the
// emulated API Gateway (pkg/lambdaemu), so it is known to pass before
// anyone points it at AWS.
package smoke

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Config says what to check and where.
type Config struct {
	// URL is the API's base URL, stage included
	// (https://abc.execute-api.eu-west-1.amazonaws.com/prod).
	URL string
	// Key is an API key of the deployment's tenant.
	Key string
	// Origin, when set, is an allowed browser origin: problems must carry
	// the CORS headers that let a page read them.
	Origin string
	// InlineLimit is the largest inline file body (default 4500000, the
	// session default); one byte more must be a 413.
	InlineLimit int
	// Runs checks POST .../runs to completion (needs the runs pipeline).
	Runs bool
	// RateProbe sends up to this many quick requests looking for the
	// per-principal 429 (0 skips the check; the default rate's burst is 40).
	RateProbe int
	// SilentCell runs a cell silent for this long, past API Gateway's idle
	// timeout, streamed (0 skips it; minutes on AWS).
	SilentCell time.Duration
	// Client makes the requests (default: one with a 15-minute timeout).
	Client *http.Client
	// Log receives one line per check.
	Log io.Writer
}

// Run makes every check in order and stops at the first failure, which
// it returns naming the check. The session it starts is deleted at the end.
func Run(ctx context.Context, cfg Config) error {
	s := &suite{cfg: cfg, sid: "smoke-" + randomHex(6)}
	if s.cfg.Client == nil {
		s.cfg.Client = &http.Client{Timeout: 15 * time.Minute}
	}
	if s.cfg.Log == nil {
		s.cfg.Log = io.Discard
	}
	if s.cfg.InlineLimit == 0 {
		s.cfg.InlineLimit = 4_500_000
	}
	s.cfg.URL = strings.TrimSuffix(s.cfg.URL, "/")
	checks := []check{
		{"healthz answers", s.healthz},
		{"401 without a key", s.unauthorized},
		{"401 for an unknown key", s.unknownKey},
		{"404 for an unknown route", s.unknownRoute},
		{"start a session", s.start},
		{"execute, JSON", s.executeJSON},
		{"execute, NDJSON", s.executeNDJSON},
		{"binary round trip, Accept */*", s.binaryRoundTrip},
		{"presigned upload from a browser origin", s.presignedUpload},
		{"413 past the inline limit", s.tooLarge},
		{"404 for another's session", s.notFound},
	}
	if cfg.Runs {
		checks = append(checks, check{"a run to completion", s.runToCompletion})
	}
	if cfg.SilentCell > 0 {
		checks = append(checks, check{"a silent cell outlives the idle timeout", s.silentCell})
	}
	if cfg.RateProbe > 0 {
		checks = append(checks, check{"429 past the principal's rate", s.rateLimited})
	}
	defer s.cleanup(ctx)
	for _, c := range checks {
		start := time.Now()
		if err := c.run(ctx); err != nil {
			fmt.Fprintf(s.cfg.Log, "FAIL %s: %v\n", c.name, err)
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Fprintf(s.cfg.Log, "ok   %s (%s)\n", c.name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

type check struct {
	name string
	run  func(context.Context) error
}

type suite struct {
	cfg     Config
	sid     string
	started bool
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *suite) cleanup(ctx context.Context) {
	if !s.started {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	res, err := s.do(ctx, req{method: "DELETE", path: s.session("")})
	if err != nil {
		fmt.Fprintf(s.cfg.Log, "note: deleting session %s: %v\n", s.sid, err)
		return
	}
	if res.status >= 300 {
		fmt.Fprintf(s.cfg.Log, "note: deleting session %s: %d %s\n", s.sid, res.status, res.body)
	}
}

func (s *suite) session(rest string) string { return "/v1/sessions/" + s.sid + rest }
