package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/local"
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

// TestServeJSONWelcome: with --json-logs the welcome is one JSON record,
// carrying the key only when serve made it.
func TestServeJSONWelcome(t *testing.T) {
	t.Parallel()
	for _, generated := range []bool{true, false} {
		keys := []local.Key{{Principal: "local", Secret: "sbx_0123456789abcdef0123456789"}}
		var buf bytes.Buffer
		logWelcome(slog.New(slog.NewJSONHandler(&buf, nil)), "http://127.0.0.1:8080", keys, generated, false)
		var rec map[string]any
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatalf("generated=%v: not one JSON record: %v\n%s", generated, err, &buf)
		}
		if rec["url"] != "http://127.0.0.1:8080" {
			t.Fatalf("generated=%v: url %v", generated, rec["url"])
		}
		if _, shown := rec["apiKey"]; shown != generated {
			t.Fatalf("generated=%v: key shown %v", generated, shown)
		}
	}
}

// TestServeAllowedOrigins: --allowed-origins and SESSIONBOX_ALLOWED_ORIGINS
// take origins as browsers send them, and refuse anything else by name.
func TestServeAllowedOrigins(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    []string
		env     string
		want    []string
		wantErr string
	}{
		{"none", nil, "", nil, ""},
		{"flag", []string{"--allowed-origins", "http://localhost:5173, https://app.example.com"}, "", []string{"http://localhost:5173", "https://app.example.com"}, ""},
		{"env", nil, "https://app.example.com", []string{"https://app.example.com"}, ""},
		{"flag wins", []string{"--allowed-origins=http://127.0.0.1:3000"}, "https://app.example.com", []string{"http://127.0.0.1:3000"}, ""},
		{"any", []string{"--allowed-origins", "*"}, "", []string{"*"}, ""},
		{"path", []string{"--allowed-origins", "https://app.example.com/ui"}, "", nil, `"https://app.example.com/ui" is not an origin`},
		{"trailing slash", []string{"--allowed-origins", "https://app.example.com/"}, "", nil, `"https://app.example.com/" is not an origin`},
		{"no scheme", []string{"--allowed-origins", "app.example.com"}, "", nil, `"app.example.com" is not an origin`},
		{"other scheme", nil, "ftp://files.example.com", nil, `"ftp://files.example.com" is not an origin`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"SESSIONBOX_ALLOWED_ORIGINS": c.env}
			o, err := serveFlags(c.args, func(k string) string { return env[k] })
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("serveFlags(%v) = %v, want an error containing %q", c.args, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.origins, c.want) {
				t.Fatalf("origins %q, want %q", o.origins, c.want)
			}
		})
	}
}

// TestServeBannerPlayground: the banner points at the playground page.
func TestServeBannerPlayground(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	printWelcome(&out, "http://127.0.0.1:8080", []local.Key{{Principal: "local", Secret: "sbx_0123456789abcdef0123456789"}}, true, false)
	if !strings.Contains(out.String(), "Playground: open http://127.0.0.1:8080/ in a browser") {
		t.Fatalf("banner lacks the playground:\n%s", out.String())
	}
}
