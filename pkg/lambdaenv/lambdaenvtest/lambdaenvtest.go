// Package lambdaenvtest holds checks of the functions' output that both
// pkg/lambdaenv's tests and the real-stack tests (e2e) make.
package lambdaenvtest

import (
	"encoding/json"
	"strings"
	"testing"
)

// NoDuplicateKeys fails when a JSON log line names a key twice at its top
// level: readers disagree on which value wins.
func NoDuplicateKeys(t testing.TB, logs string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		if _, err := dec.Token(); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			name := k.(string)
			if seen[name] {
				t.Fatalf("log line names %q twice: %s", name, line)
			}
			seen[name] = true
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
		}
	}
}
