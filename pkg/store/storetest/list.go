package storetest

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func createMany(t *testing.T, st session.Store, principal string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		mustCreate(t, st, &session.Session{Key: key(principal, id), State: session.StateRunning})
		ids = append(ids, id)
	}
	return ids
}

// listAll pages through a principal's sessions with the given page size,
// returning the ids and the size of each page.
func listAll(t *testing.T, st session.Store, principal string, limit int) (ids []string, pages []int) {
	t.Helper()
	cursor := ""
	for {
		got, next, err := st.ListSessions(t.Context(), "acme", principal, limit, cursor)
		if err != nil {
			t.Fatalf("ListSessions(%s, cursor %q): %v", principal, cursor, err)
		}
		for _, s := range got {
			if s.Principal != principal || s.Tenant != "acme" {
				t.Fatalf("listing for %s returned %s/%s", principal, s.Tenant, s.Principal)
			}
			ids = append(ids, s.SessionID)
		}
		pages = append(pages, len(got))
		if next == "" {
			return ids, pages
		}
		if len(pages) > 100 {
			t.Fatal("listing never ends")
		}
		cursor = next
	}
}

func testListPaging(t *testing.T, env Env, clock *testclock.Clock) {
	alice := createMany(t, env.Store, "alice", 7)
	bob := createMany(t, env.Store, "bob", 2)
	tests := []struct {
		principal string
		limit     int
		want      []string
		pages     []int
	}{
		{"alice", 3, alice, []int{3, 3, 1}},
		{"alice", 7, alice, []int{7}},
		{"alice", 100, alice, []int{7}},
		{"alice", 1, alice, []int{1, 1, 1, 1, 1, 1, 1}},
		{"bob", 1, bob, []int{1, 1}},
		{"carol", 5, nil, []int{0}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/limit%d", tc.principal, tc.limit), func(t *testing.T) {
			ids, pages := listAll(t, env.Store, tc.principal, tc.limit)
			if !slices.Equal(ids, tc.want) || !slices.Equal(pages, tc.pages) {
				t.Fatalf("got ids %v in pages %v, want %v in pages %v", ids, pages, tc.want, tc.pages)
			}
		})
	}
}

// testListCursorTampering makes sure a cursor cannot become a way into
// someone else's sessions.
func testListCursorTampering(t *testing.T, env Env, clock *testclock.Clock) {
	st, ctx := env.Store, t.Context()
	createMany(t, st, "alice", 3)
	createMany(t, st, "bob", 3)
	aliceCursor := firstCursor(t, st, "alice")
	bobCursor := firstCursor(t, st, "bob")
	cursors := map[string]string{
		"alice's cursor":            aliceCursor,
		"bob's rewritten to alice":  rewrite(t, bobCursor, "bob", "alice"),
		"bob's rewritten to tenant": rewrite(t, bobCursor, "acme", "evil"),
		"bob's truncated":           bobCursor[:len(bobCursor)/2],
		"not base64":                "!!!",
		"empty json":                base64.RawURLEncoding.EncodeToString([]byte("{}")),
		"garbage":                   base64.RawURLEncoding.EncodeToString([]byte("garbage")),
	}
	for name, c := range cursors {
		t.Run(name, func(t *testing.T) {
			got, _, err := st.ListSessions(ctx, "acme", "bob", 10, c)
			wantErr(t, "bob listing with "+name, err, session.ErrInvalid)
			if len(got) != 0 {
				t.Fatalf("got %d sessions with a bad cursor", len(got))
			}
		})
	}
	got, _, err := st.ListSessions(ctx, "acme", "bob", 10, bobCursor)
	if err != nil || len(got) != 2 {
		t.Fatalf("bob's own cursor: %d sessions, err %v; want 2", len(got), err)
	}
}

func firstCursor(t *testing.T, st session.Store, principal string) string {
	t.Helper()
	_, c, err := st.ListSessions(t.Context(), "acme", principal, 1, "")
	if err != nil || c == "" {
		t.Fatalf("first page of %s: cursor %q, err %v", principal, c, err)
	}
	return c
}

// rewrite replaces from with to inside a cursor, when the cursor is a
// base64 text that contains it; tests then see whether the store notices.
func rewrite(t *testing.T, cursor, from, to string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return cursor + "x"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strings.ReplaceAll(string(b), from, to)))
}
