package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestPlaygroundChromium runs scripts/playground/playground.test.mjs:
// Debian's Chromium, driven by puppeteer-core, opens the playground page
// that the local stack serves at "/", pastes a key, and checks that output
// lines show while a cell still runs, that the chart renders, that an
// exception shows its traceback and that uploads (inline and presigned)
// show in the files panel. The screenshot it takes is kept at
// e2e/testdata/out/playground.png (git-ignored).
//
// Without Chromium or puppeteer-core it skips, except in CI (CI set), where
// scripts/setup.sh has installed both and a skip would hide a failure.
func TestPlaygroundChromium(t *testing.T) {
	script, err := filepath.Abs("../scripts/playground/playground.test.mjs")
	if err != nil {
		t.Fatal(err)
	}
	chromium, err := chromiumPath()
	if err == nil {
		err = jsDepsInstalled("puppeteer-core")
	}
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("the playground test needs Chromium and puppeteer-core (%v); run scripts/setup.sh", err)
		}
		t.Fatalf("the playground test needs Chromium and puppeteer-core: %v (scripts/setup.sh installs them)", err)
	}
	shot, err := filepath.Abs("testdata/out/playground.png")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
		t.Fatal(err)
	}
	runNodeTests(t, newStack(t), script, 8*time.Minute, "CHROMIUM_PATH="+chromium, "PLAYGROUND_SCREENSHOT="+shot)
	t.Logf("playground screenshot: %s", shot)
}

// chromiumPath finds the browser: $CHROMIUM_PATH, else Debian's chromium.
func chromiumPath() (string, error) {
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH")
}
