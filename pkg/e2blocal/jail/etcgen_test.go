//go:build linux

package jail

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBuildEtcLeavesHostConfigOut builds /etc from a host /etc holding
// configuration that must not reach sandboxes, beside data that must.
func TestBuildEtcLeavesHostConfigOut(t *testing.T) {
	t.Parallel()
	host := t.TempDir()
	const secret = "host-secret-7f3a"
	files := map[string]string{
		"pip.conf":              "[global]\nindex-url = https://" + secret + "@pypi.internal/simple\n",
		"environment":           "HTTPS_PROXY=http://" + secret + "@proxy:3128\n",
		"profile":               "export TOKEN=" + secret + "\n",
		"bash.bashrc":           "export TOKEN=" + secret + "\n",
		"profile.d/corp.sh":     "export TOKEN=" + secret + "\n",
		"gitconfig":             "[credential]\n\thelper = " + secret + "\n",
		"sentinel-host-only":    secret,
		"shadow":                "root:" + secret + ":19000::::::\n",
		"ssl/private/key.pem":   secret,
		"ssl/certs/ca.pem":      "CERT",
		"python3/debian_config": "[DEFAULT]\n",
		"ld.so.cache":           "CACHE",
		"timezone":              "Europe/Paris\n",
	}
	for name, content := range files {
		p := filepath.Join(host, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "etc")
	if err := buildEtcFrom(host, out); err != nil {
		t.Fatal(err)
	}
	var leaked, listed []string
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		listed = append(listed, rel)
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(string(data), secret) {
				leaked = append(leaked, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(leaked) > 0 {
		t.Fatalf("host configuration reached the generated etc: %v", leaked)
	}
	for _, absent := range []string{"environment", "profile.d", "gitconfig", "sentinel-host-only", "shadow", "ssl/private"} {
		if _, err := os.Lstat(filepath.Join(out, absent)); err == nil {
			t.Errorf("%s is in the generated etc", absent)
		}
	}
	for _, want := range []string{"ssl/certs/ca.pem", "python3/debian_config", "ld.so.cache", "pip.conf", "passwd", "timezone"} {
		if !slices.Contains(listed, want) {
			t.Errorf("%s is missing from the generated etc %v", want, listed)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(out, "timezone")); string(data) != "Etc/UTC\n" {
		t.Errorf("timezone %q, want the generated one", data)
	}
}
