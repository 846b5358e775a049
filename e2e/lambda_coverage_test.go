package e2e

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// otherReplays are the non-API samples the authorizer, runs and reaper
// tests replay.
var otherReplays = []string{
	"authorizer/bearer-key.json", "authorizer/x-api-key.json", "authorizer/unknown-key.json", "authorizer/no-credential.json",
	"runs/run-requested.json", "runs/run-requested-idempotent.json",
	"reaper/scheduler-tick.json", "reaper/rule-envelope.json",
}

// TestEverySampleIsReplayed keeps events/ and the replay tests together: a
// sample added without a replay fails here.
func TestEverySampleIsReplayed(t *testing.T) {
	replayed := map[string]bool{}
	for _, r := range apiReplays() {
		replayed[r.file] = true
	}
	for _, f := range otherReplays {
		replayed[f] = true
	}
	n := 0
	err := filepath.WalkDir(eventsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		rel, _ := filepath.Rel(eventsDir, path)
		n++
		if !replayed[filepath.ToSlash(rel)] {
			t.Errorf("events/%s is not replayed by any test", rel)
		}
		delete(replayed, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f := range replayed {
		t.Errorf("a test replays events/%s, which does not exist", f)
	}
	if n < 29 {
		t.Fatalf("only %d samples found", n)
	}
}
