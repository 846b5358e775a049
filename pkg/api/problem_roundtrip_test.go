package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/problem"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestProblemKindsRoundTrip: every kind of error the API sends comes back
// out of the Go client as the same kind: the Manager's error becomes
// problem JSON, the client reads it, and errors.Is matches the sentinel the
// server matched, with the detail and Retry-After carried across.
func TestProblemKindsRoundTrip(t *testing.T) {
	t.Parallel()
	type roundTrip struct {
		name string
		err  error // what the Manager fails with
		want problem.Kind
	}
	var cases []roundTrip
	for _, k := range problem.Kinds {
		cases = append(cases, roundTrip{k.Slug, &session.Error{Kind: k.Err, Detail: "detail of " + k.Slug, RetryAfter: 3 * time.Second}, k})
	}
	cases = append(cases,
		roundTrip{"sandbox gone folds into unavailable", session.Errorf(session.ErrSandboxGone, "detail of sandbox-gone"), problem.Unavailable},
		roundTrip{"wrapped", fmt.Errorf("start: %w", session.Errorf(session.ErrLimit, "detail of wrapped")), problem.Limit})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.fake.err = tc.err
			_, err := client.New(h.srv.URL, keyAlice, nil).Status(context.Background(), "s1")
			checkKind(t, err, tc.want)
			var se *session.Error
			var p *client.Problem
			if !errors.As(err, &se) || !errors.As(err, &p) {
				t.Fatalf("%v: not a *session.Error and a *client.Problem", err)
			}
			var sent *session.Error
			errors.As(tc.err, &sent)
			if se.Detail != sent.Detail || p.Kind() != tc.want.Slug || p.Status != tc.want.Status {
				t.Errorf("detail %q, kind %q, status %d; want %q, %q, %d", se.Detail, p.Kind(), p.Status, sent.Detail, tc.want.Slug, tc.want.Status)
			}
			if se.RetryAfter != sent.RetryAfter {
				t.Errorf("RetryAfter %v, want %v", se.RetryAfter, sent.RetryAfter)
			}
		})
	}
}

// TestProblemFromGateway: an answer that is not problem+json (API
// Gateway's own throttle or timeout, a proxy's page) is still read as the
// kind of its status.
func TestProblemFromGateway(t *testing.T) {
	t.Parallel()
	for _, k := range []problem.Kind{problem.Limit, problem.Forbidden, problem.Unavailable, problem.Timeout} {
		t.Run(k.Slug, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(k.Status)
				_, _ = w.Write([]byte(`{"message":"gateway says no"}`))
			}))
			t.Cleanup(srv.Close)
			_, err := client.New(srv.URL, keyAlice, nil).Status(context.Background(), "s1")
			checkKind(t, err, k)
		})
	}
}

// checkKind fails unless err is of kind want and of no other kind.
func checkKind(t *testing.T, err error, want problem.Kind) {
	t.Helper()
	if !errors.Is(err, want.Err) {
		t.Fatalf("%v: errors.Is(err, %v) is false", err, want.Err)
	}
	for _, k := range problem.Kinds {
		if k.Slug != want.Slug && errors.Is(err, k.Err) {
			t.Errorf("%v is also %v", err, k.Err)
		}
	}
}
