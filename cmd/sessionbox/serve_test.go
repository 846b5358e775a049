package main

import (
	"context"
	"strings"
	"testing"
)

// TestServeInternetSetting: a malformed SESSIONBOX_ALLOW_INTERNET_ACCESS is
// refused before anything starts.
func TestServeInternetSetting(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SESSIONBOX_ALLOW_INTERNET_ACCESS": "maybe"}
	err := runServe(context.Background(), []string{"--data-dir", t.TempDir()}, func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), `SESSIONBOX_ALLOW_INTERNET_ACCESS: "maybe" is neither true nor false`) {
		t.Fatalf("runServe: %v", err)
	}
}

// TestServeBannerKey: the banner shows a key serve generated, and never one
// the operator gave.
func TestServeBannerKey(t *testing.T) {
	t.Parallel()
	given := "ops=sbx_0123456789abcdef0123456789"
	cases := []struct {
		name     string
		given    string
		wantKey  bool
		wantText string
	}{
		{"generated", "", true, "API key (principal \"local\")"},
		{"given", given, false, "1 API key(s) from SESSIONBOX_API_KEYS or --api-keys (not shown)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			keys, generated, err := serveKeys(c.given, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			printWelcome(&out, "http://127.0.0.1:8080", keys, generated, false)
			banner := out.String()
			if got := strings.Contains(banner, keys[0].Secret); got != c.wantKey {
				t.Fatalf("banner shows the key: %v, want %v:\n%s", got, c.wantKey, banner)
			}
			if !strings.Contains(banner, c.wantText) {
				t.Fatalf("banner lacks %q:\n%s", c.wantText, banner)
			}
		})
	}
}
