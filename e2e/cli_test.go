package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/local"
)

// cliStep is one run of the sessionbox binary and what it must show.
type cliStep struct {
	name   string
	args   []string
	code   int
	stdout string // a substring of stdout
	stderr string // a substring of stderr
	// check looks further at stdout, when set.
	check func(t *testing.T, stdout string)
	// later gives the arguments when they depend on an earlier step.
	later func() []string
}

// TestCLIAgainstLocalService drives the built sessionbox binary against a
// local service with real sandboxes: every client command, flags after
// arguments, --json output that parses, images saved from a chart, and a
// failed download that leaves no file.
func TestCLIAgainstLocalService(t *testing.T) {
	bin := buildSessionbox(t)
	key, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	svc, err := local.Start(ctx, local.Config{DataDir: t.TempDir(), Keys: []local.Key{key}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()

	work := t.TempDir()
	blob := make([]byte, 5<<20)
	_, _ = rand.Read(blob)
	if err := os.WriteFile(filepath.Join(work, "blob.bin"), blob, 0o600); err != nil {
		t.Fatal(err)
	}
	images := filepath.Join(work, "images")
	var runID, cmdID string
	jsonField := func(field, want string) func(t *testing.T, stdout string) {
		return func(t *testing.T, stdout string) {
			var v map[string]any
			if err := json.Unmarshal([]byte(stdout), &v); err != nil {
				t.Fatalf("--json printed %q: %v", stdout, err)
			}
			if got, _ := v[field].(string); got != want {
				t.Fatalf("%s = %v, want %q in %s", field, v[field], want, stdout)
			}
		}
	}
	steps := []cliStep{
		{name: "exec defines", args: []string{"exec", "x = 41", "--session", "cli"}},
		{name: "exec flags after code", args: []string{"exec", "x + 1", "--session", "cli"}, stdout: "42\n"},
		{name: "exec --json", args: []string{"exec", "--json", "print('hi'); x + 1", "--session=cli"}, check: func(t *testing.T, stdout string) {
			var res struct {
				Success bool
				Stdout  string
				Results []struct{ Text string }
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || !res.Success || res.Stdout != "hi\n" || len(res.Results) != 1 || res.Results[0].Text != "42" {
				t.Fatalf("exec --json printed %q (%v)", stdout, err)
			}
		}},
		{name: "exec saves a chart", args: []string{"exec", "--session", "cli", "--save-images", images,
			"import matplotlib.pyplot as plt; plt.plot([1, 3, 2]); plt.show()"}, stdout: filepath.Join(images, "result-1.png"),
			check: func(t *testing.T, _ string) {
				b, err := os.ReadFile(filepath.Join(images, "result-1.png"))
				if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
					t.Fatalf("saved chart: %d bytes, %v", len(b), err)
				}
			}},
		{name: "exec that raises", args: []string{"exec", "1/0", "--session", "cli"}, code: 1, stderr: "ZeroDivisionError"},
		{name: "cmd bg", args: []string{"cmd", "bg", "--session", "cli", "--", "for i in 1 2 3; do echo l$i; sleep 0.2; done; echo e >&2; exit 5"},
			check: func(t *testing.T, stdout string) { cmdID = strings.TrimSpace(stdout) }},
		{name: "cmd output --follow", later: func() []string {
			return []string{"cmd", "output", cmdID, "--follow", "--wait", "2", "--session", "cli"}
		},
			code: 5, stdout: "l1\nl2\nl3\n", stderr: "the command exited 5"},
		{name: "cmd output after the end", later: func() []string { return []string{"cmd", "output", cmdID, "--json", "--session", "cli"} },
			code: 5, stdout: `"stdout": ""`},
		{name: "files put", args: []string{"files", "put", filepath.Join(work, "blob.bin"), "data/blob.bin", "--session", "cli"}, stdout: "/home/user/data/blob.bin (5.0 MiB)"},
		{name: "files get", args: []string{"files", "--session", "cli", "get", "data/blob.bin", filepath.Join(work, "back.bin")}, stderr: "(5.0 MiB)",
			check: func(t *testing.T, _ string) {
				if b, err := os.ReadFile(filepath.Join(work, "back.bin")); err != nil || !bytes.Equal(b, blob) {
					t.Fatalf("downloaded %d bytes (%v), want the %d put", len(b), err, len(blob))
				}
			}},
		{name: "files get of a missing file", args: []string{"files", "get", "nope.bin", filepath.Join(work, "nope.bin"), "--session", "cli"}, code: 1, stderr: "404",
			check: func(t *testing.T, _ string) {
				if _, err := os.Stat(filepath.Join(work, "nope.bin")); !os.IsNotExist(err) {
					t.Fatalf("a failed get left %v", err)
				}
			}},
		{name: "files ls --json", args: []string{"files", "ls", "data", "--session", "cli", "--json"}, check: func(t *testing.T, stdout string) {
			var out struct{ Entries []struct{ Path string } }
			if err := json.Unmarshal([]byte(stdout), &out); err != nil || len(out.Entries) != 1 || out.Entries[0].Path != "/home/user/data/blob.bin" {
				t.Fatalf("ls --json printed %q (%v)", stdout, err)
			}
		}},
		{name: "files rm", args: []string{"files", "rm", "data/blob.bin", "--session", "cli"}, stdout: "removed data/blob.bin"},
		{name: "files ls after rm", args: []string{"files", "ls", "data", "--session", "cli", "--json"}, stdout: `"entries": []`},
		{name: "runs submit --wait", args: []string{"runs", "submit", "print('from a run')", "--session", "cli", "--wait"}, stdout: "from a run\n", stderr: "succeeded"},
		{name: "runs submit --json", args: []string{"runs", "submit", "--json", "--session", "cli", "6 * 7"}, check: func(t *testing.T, stdout string) {
			var acc struct{ RunID string }
			if err := json.Unmarshal([]byte(stdout), &acc); err != nil || acc.RunID == "" {
				t.Fatalf("runs submit --json printed %q (%v)", stdout, err)
			}
			runID = acc.RunID
		}},
		{name: "runs get --wait --json", later: func() []string { return []string{"runs", "get", runID, "--wait", "--json"} },
			check: func(t *testing.T, stdout string) {
				var run struct {
					Status string
					Result struct{ Results []struct{ Text string } }
				}
				if err := json.Unmarshal([]byte(stdout), &run); err != nil || run.Status != "succeeded" ||
					len(run.Result.Results) != 1 || run.Result.Results[0].Text != "42" {
					t.Fatalf("runs get printed %q (%v)", stdout, err)
				}
			}},
		{name: "checkpoint", args: []string{"checkpoint", "--session", "cli"}, stdout: "checkpoint of cli at "},
		{name: "status", args: []string{"status", "--session", "cli"}, stdout: "running"},
		{name: "status --json", args: []string{"status", "--json", "--session", "cli"}, check: jsonField("state", "running")},
		{name: "reset", args: []string{"reset", "--session", "cli"}, stdout: "reset the kernel of cli"},
		{name: "exec after reset", args: []string{"exec", "x", "--session", "cli"}, code: 1, stderr: "NameError"},
		{name: "exec writes a file", args: []string{"exec", "open('notes.txt', 'w').write('kept')", "--session", "cli"}},
		{name: "stop --json", args: []string{"stop", "--session", "cli", "--json"}, check: jsonField("state", "stopped")},
		{name: "files ls of a stopped session", args: []string{"files", "ls", "--session", "cli"}, stdout: "/home/user/notes.txt",
			stderr: "the session has no sandbox: files as checkpointed at"},
		{name: "files ls --json of a stopped session", args: []string{"files", "ls", "--json", "--session", "cli"}, check: jsonField("source", "workspace")},
		{name: "files get of a stopped session", args: []string{"files", "get", "notes.txt", "-", "--session", "cli"}, stdout: "kept",
			stderr: "checkpointed at"},
		{name: "status after reads of a stopped session", args: []string{"status", "--json", "--session", "cli"}, check: jsonField("state", "stopped")},
		{name: "start", args: []string{"start", "--session", "cli2", "--idle-timeout", "120", "--meta", "team=a"}, stdout: "team=a"},
		{name: "sessions", args: []string{"sessions"}, stdout: "cli2"},
		{name: "rm", args: []string{"rm", "cli", "cli2"}, stdout: "deleted cli\ndeleted cli2\n"},
		{name: "status of a deleted session", args: []string{"status", "--session", "cli"}, code: 1, stderr: `session "cli" not found`},
	}
	env := append(os.Environ(), "SESSIONBOX_URL="+svc.URL, "SESSIONBOX_API_KEY="+key.Secret)
	sb := func(args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errOut
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run sessionbox %q: %v", args, err)
		}
		return code, out.String(), errOut.String()
	}
	for _, st := range steps {
		if st.later != nil {
			st.args = st.later()
		}
		code, stdout, stderr := sb(st.args...)
		if code != st.code || !strings.Contains(stdout, st.stdout) || !strings.Contains(stderr, st.stderr) {
			t.Fatalf("%s: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", st.name, code, st.code, stdout, st.stdout, stderr, st.stderr)
		}
		if st.check != nil {
			st.check(t, stdout)
		}
	}
}
