package main

import (
	"context"
	"strings"
	"testing"
)

// TestMCPCommandRefuses: bad arguments and a missing key stop `sessionbox
// mcp` before it speaks, with an error naming what is wrong.
func TestMCPCommandRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		key  string
		want string
	}{
		{"bad session", []string{"--session", "a/b"}, "sbx_0123456789abcdef", "--session: session id must be"},
		{"stray argument", []string{"extra"}, "sbx_0123456789abcdef", `unexpected argument "extra"`},
		{"no key", nil, "", "SESSIONBOX_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"SESSIONBOX_API_KEY": tc.key}
			err := runMCP(context.Background(), tc.args, func(k string) string { return env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to name %q", err, tc.want)
			}
		})
	}
}
