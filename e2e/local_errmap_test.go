package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSandboxErrorsMapped: what the sandbox refuses reaches the caller as
// the caller's problem, with the path and the sandbox's reason: writing or
// removing system files is 403, a listing past the runtime's entry limit is
// 400 saying to use a smaller depth, a missing file or directory is 404
// naming the path and saying which is missing; no problem shows the
// provider's error chain.
func TestSandboxErrorsMapped(t *testing.T) {
	svc, alice := startLocalAlice(t)
	base := svc.URL + "/v1/sessions/s1"
	code, res := call(t, "POST", base+"/execute", alice.Secret,
		`{"code":"import os\nos.makedirs('many', exist_ok=True)\nfor i in range(100001): open(f'many/{i}', 'w').close()\n'ok'"}`)
	if code != http.StatusOK || res["success"] != true {
		t.Fatalf("make many files: %d %v", code, res)
	}
	cases := []struct {
		name, method, path, body string
		want                     int
		detail                   []string
	}{
		{"write a system file", "PUT", "/files/content?path=/etc/passwd", "root::0:0::/:/bin/sh\n", 403, []string{"/etc/passwd", "permission denied"}},
		{"remove a system dir", "DELETE", "/files?path=/usr", "", 403, []string{"/usr", "permission denied"}},
		{"list too many entries", "GET", "/files?path=many", "", 400, []string{"many", "use a smaller depth"}},
		{"read a missing file", "GET", "/files/content?path=data/missing.csv", "", 404, []string{`"/home/user/data/missing.csv: no such file or directory"`}},
		{"list a missing directory", "GET", "/files?path=nodir", "", 404, []string{`"list /home/user/nodir: no such directory"`}},
		{"download a missing file", "POST", "/files/download-url", `{"path":"gone.txt"}`, 404, []string{`"/home/user/gone.txt: no such file or directory"`}},
		{"read a directory", "GET", "/files/content?path=many", "", 400, []string{`"/home/user/many is a directory"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), c.method, base+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+alice.Secret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s, want %d problem+json: %s", resp.StatusCode, resp.Header.Get("Content-Type"), c.want, b)
			}
			for _, d := range c.detail {
				if !strings.Contains(string(b), d) {
					t.Fatalf("problem lacks %q: %s", d, b)
				}
			}
			// No internal error chain reaches the client.
			var p struct{ Detail string }
			_ = json.Unmarshal(b, &p)
			for _, internal := range []string{"e2b", "envd", "filesystem.", "sandbox i", "rpc", "%!", ": not found"} {
				if strings.Contains(p.Detail, internal) {
					t.Errorf("problem shows internals (%q): %s", internal, b)
				}
			}
		})
	}
}
