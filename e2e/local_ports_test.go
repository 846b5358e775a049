package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/local"
)

// listeningPorts returns the loopback TCP ports this process listens on.
func listeningPorts(t *testing.T) map[string]bool {
	t.Helper()
	inodes := map[string]string{} // inode -> port
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[3] == "0A" { // TCP_LISTEN
				_, hexPort, _ := strings.Cut(fields[1], ":")
				var port int
				fmt.Sscanf(hexPort, "%X", &port)
				inodes[fields[9]] = fmt.Sprint(port)
			}
		}
		fh.Close()
	}
	fds, _ := filepath.Glob("/proc/self/fd/*")
	ports := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fd)
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			if port, ok := inodes[strings.TrimSuffix(inode, "]")]; ok {
				ports[port] = true
			}
		}
	}
	return ports
}

// TestPortsRefuseStrangers: of the ports local mode opens (the API, the S3
// stand-in, the runtime's control API and its sandbox proxy; the DynamoDB
// emulator has none), none answers a caller without credentials: not the
// runtime's control API with any key of E2B's shape, not the S3 stand-in
// unsigned, not a sandbox's envd, interpreter (its /contexts included) or
// other ports without its access or traffic token, even knowing the
// sandbox's id: local mode's sandboxes are private. The one exception is the
// API port's playground page ("/" and its files), which is public and holds
// nothing but itself: it is checked to be that page.
func TestPortsRefuseStrangers(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	before := listeningPorts(t)
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	var opened []string
	for p := range listeningPorts(t) {
		if !before[p] {
			opened = append(opened, p)
		}
	}
	if len(opened) != 4 {
		t.Fatalf("local mode listens on %d ports %v, want 4 (API, S3, runtime API, sandbox proxy)", len(opened), opened)
	}
	code, res := call(t, "POST", svc.URL+"/v1/sessions/s1/execute", alice.Secret, `{"code":"6 * 7"}`)
	if code != http.StatusOK {
		t.Fatalf("execute = %d %v", code, res)
	}
	// A server inside on 8000: the private sandbox's proxy, not an empty
	// port, must be what refuses the stranger.
	serve := `{"code":"import subprocess, socket, time\nsubprocess.Popen(['python3', '-m', 'http.server', '8000'], cwd='/tmp', stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\nfor _ in range(100):\n    try:\n        socket.create_connection(('127.0.0.1', 8000), 1).close(); break\n    except OSError:\n        time.sleep(0.1)\n"}`
	if code, res := call(t, "POST", svc.URL+"/v1/sessions/s1/execute", alice.Secret, serve); code != http.StatusOK {
		t.Fatalf("start a server inside = %d %v", code, res)
	}
	_, sess := call(t, "GET", svc.URL+"/v1/sessions/s1/sandbox", alice.Secret, "")
	id, _ := sess["sandboxId"].(string)
	if id == "" {
		t.Fatalf("no sandbox id in %v", sess)
	}
	probes := []struct {
		method, path string
		hdr          map[string]string
	}{
		{"GET", "/", nil},
		{"GET", "/v1/sessions", nil},
		{"GET", "/sandboxes", map[string]string{"X-API-Key": "e2b_0123456789abcdef"}},
		{"GET", "/v2/sandboxes", map[string]string{"X-API-Key": "e2b_00000000000000000000000000000000"}},
		{"GET", "/sessionbox-transfers", nil},
		{"GET", "/sessionbox-transfers/transfers/x", nil},
		{"PUT", "/sessionbox-transfers/transfers/x", nil},
		{"POST", "/", map[string]string{"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": "application/x-amz-json-1.0"}},
		{"GET", "/files?path=/etc/hostname", map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49983"}},
		{"POST", "/process.Process/List", map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49983", "Content-Type": "application/json"}},
		{"POST", "/execute", map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999", "Content-Type": "application/json"}},
		{"GET", "/contexts", map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999"}},
		{"POST", "/contexts", map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999", "Content-Type": "application/json"}},
		{"GET", "/_sandboxes/" + id + "/8000/", nil},
		{"GET", "/", map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "8000"}},
	}
	apiPort := svc.URL[strings.LastIndex(svc.URL, ":")+1:]
	for _, port := range opened {
		for _, p := range probes {
			if port == apiPort && p.method == "GET" && p.path == "/" {
				checkPlaygroundPage(t, svc.URL, p.hdr)
				continue
			}
			req, _ := http.NewRequestWithContext(t.Context(), p.method, "http://127.0.0.1:"+port+p.path, strings.NewReader("{}"))
			for k, v := range p.hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s on port %s: %v", p.method, p.path, port, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Logf("port %s: %s %s -> %d", port, p.method, p.path, resp.StatusCode)
			if resp.StatusCode < 400 {
				t.Errorf("port %s answered a stranger's %s %s with %d: %.200s", port, p.method, p.path, resp.StatusCode, body)
			}
			if !slices.Contains([]int{401, 403, 404, 405, 502}, resp.StatusCode) {
				t.Errorf("port %s: %s %s = %d, want a refusal: %.200s", port, p.method, p.path, resp.StatusCode, body)
			}
		}
	}
}

// checkPlaygroundPage asserts that GET / on the API port is the playground's
// static page, under its CSP, whatever else the request carries.
func checkPlaygroundPage(t *testing.T, url string, hdr map[string]string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url+"/", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		!strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		!strings.Contains(string(body), "<title>sessionbox playground</title>") {
		t.Errorf("GET / on the API port = %d %q, CSP %q: want the playground page: %.200s", resp.StatusCode,
			resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"), body)
	}
}
