package buildstamp

import "testing"

// TestFromLdflags: the stamp is found in the -ldflags forms go build
// records, and nothing else is taken for it.
func TestFromLdflags(t *testing.T) {
	t.Parallel()
	cases := []struct{ ldflags, want string }{
		{"", ""},
		{"-s -w", ""},
		{"-X " + Symbol + "=abc", "abc"},
		{"-s -X " + Symbol + "=abc -w", "abc"},
		{"-X=" + Symbol + "=abc", "abc"},
		{"--X " + Symbol + "=abc", "abc"},
		{"'-X' '" + Symbol + "=abc'", "abc"},
		{"-X " + Symbol + "=one -X " + Symbol + "=two", "two"},
		{"-X main.version=1.0", ""},
		{"-X " + Symbol + "x=abc", ""},
		{"-X", ""},
	}
	for _, c := range cases {
		if got := FromLdflags(c.ldflags); got != c.want {
			t.Errorf("FromLdflags(%q) = %q, want %q", c.ldflags, got, c.want)
		}
	}
}
