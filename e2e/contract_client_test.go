package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestContractGeneratedClient runs sdk/typescript/test/contract/session.ts,
// a session end to end written against openapi-typescript's types through
// openapi-fetch, on a local stack: the types make check.sh's type check
// pass, and this holds what they promise to what the server answers (the
// stream's line shapes, a CSV written as documented and read back byte for
// byte, openapi-fetch's default JSON-encoded string body refused with 415
// rather than stored with quotes, typed problems).
func TestContractGeneratedClient(t *testing.T) {
	if err := jsDepsInstalled("openapi-typescript", "openapi-fetch", "typescript"); err != nil {
		if testing.Short() {
			t.Skipf("the generators are not installed (%v); run scripts/setup.sh", err)
		}
		t.Fatalf("the contract client needs node and the npm tools: %v (run scripts/setup.sh; -short skips it)", err)
	}
	scripts, err := filepath.Abs("../scripts")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile("../sdk/typescript/test/contract/session.ts")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"session.ts": string(src),
		"tsconfig.json": `{"compilerOptions": {"target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
			"lib": ["ES2022", "DOM", "DOM.Iterable", "DOM.AsyncIterable"], "types": [], "strict": true,
			"rootDir": ".", "outDir": "out", "skipLibCheck": true}, "files": ["session.ts"]}`,
		"run.mjs": `import { session } from "./out/session.js";
const lines = await session(process.env.SESSIONBOX_URL, process.env.SESSIONBOX_API_KEY, "contract-client");
console.log(JSON.stringify(lines));`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The copy resolves openapi-fetch and the tools from scripts/.
	if err := os.Symlink(filepath.Join(scripts, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := func(env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	bin := filepath.Join(scripts, "node_modules", ".bin")
	run(nil, filepath.Join(bin, "openapi-typescript"), mustAbs(t, "../pkg/api/openapi.json"), "--output", "build/openapi.d.ts")
	run(nil, filepath.Join(bin, "tsc"), "-p", "tsconfig.json")

	s := newStack(t)
	out := run([]string{"SESSIONBOX_URL=" + s.url, "SESSIONBOX_API_KEY=" + s.alice}, "node", "run.mjs")
	var lines []string
	if err := json.Unmarshal([]byte(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]), &lines); err != nil {
		t.Fatalf("the script's output %q: %v", out, err)
	}
	t.Logf("the script saw: %q", lines)
	want := []string{
		"started contract-client: running",
		"naive write refused: 415 https://sessionbox.dev/problems/unsupported-media-type",
		"wrote /home/user/data/temps.csv (27 bytes)",
		"json mean",
		"rows 2",
		"stdout working",
		"result png",
		"exception ZeroDivisionError",
		"done success=false",
		"pip |install refused: ", // the sandbox may have no way to PyPI
		"read city,temp",
		"read back the exact bytes",
		"run succeeded: 45",
		"fix the request: ",
		"deleted: 204",
	}
	at := 0
	for _, w := range want {
		for at < len(lines) && !hasAnyPrefix(lines[at], strings.Split(w, "|")) {
			at++
		}
		if at == len(lines) {
			t.Fatalf("no line %q in order in %q", w, lines)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
