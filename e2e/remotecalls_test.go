package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// The kinds of remote call counted, in the order of the table's columns.
const (
	callDBRead      = "dynamodb reads"
	callDBWrite     = "dynamodb writes"
	callE2BAPI      = "e2b control plane"
	callEnvd        = "envd"
	callInterpreter = "interpreter"
	callS3          = "s3"
)

var callKinds = []string{callDBRead, callDBWrite, callE2BAPI, callEnvd, callInterpreter, callS3}

// callCounter counts remote calls by kind, as counting HTTP transports in
// front of each dependency see them.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *callCounter) add(kind string) {
	c.mu.Lock()
	c.counts[kind]++
	c.mu.Unlock()
}

// take returns the counts since the last take and starts over.
func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

// total is the number of calls counted since the last take.
func (c *callCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

type countingTransport struct {
	next     http.RoundTripper
	counter  *callCounter
	classify func(*http.Request) string
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.counter.add(t.classify(r))
	return t.next.RoundTrip(r)
}

func (c *callCounter) client(next http.RoundTripper, classify func(*http.Request) string) *http.Client {
	return &http.Client{Transport: countingTransport{next: next, counter: c, classify: classify}}
}

// dynamoKind tells reads from writes by the operation in X-Amz-Target.
func dynamoKind(r *http.Request) string {
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	switch op {
	case "GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems":
		return callDBRead
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
		return callDBWrite
	}
	return "dynamodb " + op
}

// e2bKind tells the control plane from a sandbox's envd and interpreter:
// with one sandbox URL, pkg/e2b names the sandbox's port in a header.
func e2bKind(r *http.Request) string {
	switch r.Header.Get("E2b-Sandbox-Port") {
	case "":
		return callE2BAPI
	case "49999":
		return callInterpreter
	}
	return callEnvd
}

// newCountingStack is the service as `serve` wires it (the real store,
// blob and E2B adapters) with counting transports in front of the DynamoDB
// emulator, the S3 stand-in and the local E2B runtime. Its reaper runs only
// when the test calls it.
func newCountingStack(t *testing.T) (*stack, *local.Service, *callCounter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &callCounter{counts: map[string]int{}}
	rt := startRuntime(t)
	e2bCfg := e2b.Config{APIKey: testE2BKey, APIURL: rt.APIURL(), SandboxURL: rt.SandboxURL(),
		HTTPClient: c.client(http.DefaultTransport.(*http.Transport).Clone(), e2bKind)}
	db, err := localaws.NewDynamoDB(context.WithoutCancel(ctx), localaws.WithDataDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	dbClient := db.Client(func(o *dynamodb.Options) {
		o.HTTPClient = c.client(o.HTTPClient.(*http.Client).Transport, dynamoKind)
	})
	endpoint, stopS3, err := localaws.StartS3(context.WithoutCancel(ctx), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopS3)
	s3Client := localaws.S3Client(endpoint, func(o *s3.Options) {
		o.HTTPClient = c.client(http.DefaultTransport.(*http.Transport).Clone(), func(*http.Request) string { return callS3 })
	})
	s, logger := newBareStack(t)
	keys := newKeys(t, "alice", "bob")
	s.alice, s.bob = keys[0].Secret, keys[1].Secret
	svc, err := local.Start(ctx, local.Config{DataDir: t.TempDir(), Tenant: "t1", Keys: keys, E2B: e2bCfg, Logger: logger,
		DynamoDB: dbClient, S3: s3Client, ReapInterval: 24 * time.Hour,
		// Uploads from URLs fetch from a loopback origin here.
		Session: session.Config{URLUploads: session.URLUploadConfig{AllowPrivate: true}}})
	if err != nil {
		t.Fatalf("start local mode: %v", err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	s.stackID = svc.Manager.Config().StackID
	s.sandboxes = sandboxesOf(t, rt)
	s.url, s.client = svc.URL, &http.Client{}
	return s, svc, c
}

// settle waits until no remote call has been counted for a while: an
// operation's asynchronous part (a run's worker) has ended. The quiet
// second is long beside a call's gaps on a host loaded many times over,
// where half a second let an operation's late calls count for the next.
func (c *callCounter) settle(t *testing.T) {
	t.Helper()
	last, quiet := c.total(), time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Since(quiet) < time.Second; {
		if time.Now().After(deadline) {
			t.Fatal("remote calls did not settle")
		}
		time.Sleep(20 * time.Millisecond)
		if n := c.total(); n != last {
			last, quiet = n, time.Now()
		}
	}
}

// TestRemoteCallsPerOperation counts the remote calls each API operation
// makes on the production adapters and holds them to the table in
// docs/performance.md: a count past its row fails (a regression), one
// below it asks for the table to be updated. Authentication is left out,
// as API Gateway's authorizer cache keeps it out of nearly every request
// (one key read per key per 5 minutes). Run with -v to print the table.
func TestRemoteCallsPerOperation(t *testing.T) {
	want := readCallTable(t, "../docs/performance.md")
	s, svc, c := newCountingStack(t)
	got := map[string]map[string]int{}
	measure := func(op string, do func()) {
		t.Helper()
		c.take()
		do()
		c.settle(t)
		got[op] = c.take()
	}
	s.req(s.alice, "GET", "/v1/sessions", nil) // the key is cached from here on
	c.settle(t)                                // the blob expiry's first sweep

	// The tenant's first start ever also writes its slots item, once.
	measure("first start of a tenant", func() {
		s.json(s.alice, "POST", "/v1/sessions/calls-first/sandbox/start", map[string]any{}, nil)
	})
	measure("start", func() { s.json(s.alice, "POST", "/v1/sessions/calls/sandbox/start", map[string]any{}, nil) })
	measure("execute, first of a new session", func() { s.exec(s.alice, "calls-new", "1") })
	s.exec(s.alice, "calls", "x = 1")
	measure("execute, steady state", func() { s.exec(s.alice, "calls", "x + 1") })
	var cc contextView
	measure("create context", func() { cc = s.createContext("calls", map[string]any{"cwd": "/tmp"}) })
	measure("execute in a context", func() { s.execIn("calls", cc.ContextID, "1") })
	measure("sandbox metrics", func() { s.json(s.alice, "GET", "/v1/sessions/calls/sandbox/metrics", nil, nil) })
	measure("run command", func() { s.command("calls", map[string]any{"cmd": "true"}) })
	var bg struct {
		CommandID string `json:"commandId"`
	}
	measure("start background command", func() {
		s.json(s.alice, "POST", "/v1/sessions/calls/commands", map[string]any{"cmd": "sleep 600", "background": true}, &bg)
	})
	measure("list commands", func() { s.listCommands("calls") })
	measure("command status", func() { s.json(s.alice, "GET", "/v1/sessions/calls/commands/"+bg.CommandID, nil, nil) })
	measure("kill command", func() { s.json(s.alice, "POST", "/v1/sessions/calls/commands/"+bg.CommandID+"/kill", nil, nil) })

	base := "/v1/sessions/calls"
	measure("write file", func() { s.req(s.alice, "PUT", base+"/files/content?path=data/a.txt", strings.NewReader("hello")) })
	measure("list files", func() { s.req(s.alice, "GET", base+"/files?path=data", nil) })
	measure("read file", func() { s.req(s.alice, "GET", base+"/files/content?path=data/a.txt", nil) })
	measure("download url", func() {
		s.json(s.alice, "POST", base+"/files/download-url", map[string]any{"path": "data/a.txt"}, nil)
	})
	measure("delete file", func() { s.req(s.alice, "DELETE", base+"/files?path=data/a.txt", nil) })
	measure("presigned upload + import", func() { presignedUploadImport(t, s, base) })
	origin := "http://127.0.0.1:" + origin(t)
	measure("upload from URLs, 3 files", func() {
		urls := []string{origin + "/cd/a.txt", origin + "/cd/b.txt", origin + "/raw/c.txt"}
		var res uploadResult
		s.json(s.alice, "POST", base+"/files/upload-urls", map[string]any{"urls": urls}, &res)
		if res.Status != "success" {
			t.Fatalf("upload-urls: %+v", res)
		}
	})
	install := prepareLocalIndex(t, s, "calls")
	measure("install", install)
	measure("run (request and execution)", func() {
		s.json(s.alice, "POST", base+"/runs", map[string]any{"code": "21 * 2"}, nil, "Idempotency-Key", "calls-1")
	})
	measure("stop", func() { s.req(s.alice, "POST", "/v1/sessions/calls-new/sandbox/stop", nil) })

	const due = 3
	for i := range due {
		s.json(s.alice, "POST", fmt.Sprintf("/v1/sessions/due-%d/sandbox/start", i), map[string]any{"idleTimeoutSecs": 1}, nil)
	}
	// Real time is the subject: the service reaps by the system clock, and
	// deadlines are whole seconds.
	time.Sleep(2100 * time.Millisecond)
	measure(fmt.Sprintf("reaper tick, %d sessions due", due), func() {
		rep, err := svc.Manager.Reap(context.Background())
		if err != nil || rep.Killed+rep.Paused != due {
			t.Fatalf("reap: %+v %v, want %d reaped", rep, err, due)
		}
	})

	var table strings.Builder
	table.WriteString("| operation | " + strings.Join(callKinds, " | ") + " |\n|---|" + strings.Repeat("---:|", len(callKinds)) + "\n")
	for _, op := range callOps(got) {
		table.WriteString("| " + op + " |")
		for _, k := range callKinds {
			fmt.Fprintf(&table, " %d |", got[op][k])
		}
		table.WriteString("\n")
		for k, n := range got[op] {
			w, known := want[op][k]
			switch {
			case !known && !isCallKind(k):
				t.Errorf("%s: %d calls of %q, a kind the table has no column for", op, n, k)
			case !known && want[op] == nil:
				t.Errorf("%s: not in docs/performance.md's table", op)
			case n > w:
				t.Errorf("%s: %d %s, the table allows %d (a regression, or update the table with the reason)", op, n, k, w)
			case n < w:
				t.Logf("%s: %d %s, fewer than the table's %d: update the table", op, n, k, w)
			}
		}
	}
	t.Logf("remote calls per operation:\n%s", table.String())
}

// callOps lists the measured operations in the table's order.
func callOps(got map[string]map[string]int) []string {
	order := []string{"first start of a tenant", "start", "execute, first of a new session", "execute, steady state", "create context", "execute in a context", "sandbox metrics", "write file", "list files",
		"read file", "download url", "delete file", "presigned upload + import", "upload from URLs, 3 files", "install", "run (request and execution)", "stop"}
	for op := range got {
		if strings.HasPrefix(op, "reaper tick") {
			order = append(order, op)
		}
	}
	return order
}

func isCallKind(k string) bool {
	for _, c := range callKinds {
		if c == k {
			return true
		}
	}
	return false
}

var callRow = regexp.MustCompile(`^\|\s*([^|]+?)\s*\|((?:\s*\d+\s*\|)+)\s*$`)

// readCallTable reads the table under "## Remote calls per operation".
func readCallTable(t *testing.T, path string) map[string]map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]int{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Remote calls per operation"
			continue
		}
		m := callRow.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		cells := strings.Split(strings.Trim(m[2], " |"), "|")
		if len(cells) != len(callKinds) {
			t.Fatalf("%s: row %q has %d counts, want %d", path, m[1], len(cells), len(callKinds))
		}
		row := map[string]int{}
		for i, cell := range cells {
			n, _ := strconv.Atoi(strings.TrimSpace(cell))
			row[callKinds[i]] = n
		}
		out[m[1]] = row
	}
	if len(out) == 0 {
		t.Fatalf("%s has no rows under \"## Remote calls per operation\"", path)
	}
	return out
}

// presignedUploadImport asks for an upload URL, puts the bytes straight to
// the blob store as a browser would (not the service's call) and imports
// them.
func presignedUploadImport(t *testing.T, s *stack, base string) {
	data := bytes.Repeat([]byte("x"), 1<<20)
	var up struct {
		UploadURL  string            `json:"uploadUrl"`
		Method     string            `json:"method"`
		Headers    map[string]string `json:"headers"`
		TransferID string            `json:"transferId"`
	}
	s.json(s.alice, "POST", base+"/files/upload-url", map[string]any{"path": "big.bin", "sizeBytes": len(data)}, &up)
	req, _ := http.NewRequest(up.Method, up.UploadURL, bytes.NewReader(data))
	for k, v := range up.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	s.json(s.alice, "POST", base+"/files/import", map[string]any{"transferId": up.TransferID}, nil)
}

// prepareLocalIndex serves a one-wheel package index inside sid's sandbox
// and returns the install of that package.
func prepareLocalIndex(t *testing.T, s *stack, sid string) func() {
	base := "/v1/sessions/" + sid
	name, wheel := buildWheel(t, "sbxcalls", "1.0", "counted")
	s.req(s.alice, "PUT", base+"/files/content?path=/home/user/index/sbxcalls/"+name, bytes.NewReader(wheel))
	page := fmt.Sprintf(`<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>`, name, name)
	s.req(s.alice, "PUT", base+"/files/content?path=/home/user/index/sbxcalls/index.html", strings.NewReader(page))
	r := s.exec(s.alice, sid, "import subprocess, socket, sys, time\n"+
		"srv = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', '127.0.0.1', '--directory', '/home/user/index', '8766'],"+
		" stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"+
		"for _ in range(100):\n    try:\n        socket.create_connection(('127.0.0.1', 8766), 0.2).close(); break\n"+
		"    except OSError: time.sleep(0.05)\n'up'")
	if !strings.Contains(r.text(), "up") {
		t.Fatalf("index server: %+v", r)
	}
	return func() {
		var res struct {
			Success bool `json:"success"`
		}
		s.json(s.alice, "POST", base+"/install", map[string]any{"packages": []string{"sbxcalls==1.0"}, "indexUrl": "http://127.0.0.1:8766/"}, &res)
		if !res.Success {
			t.Fatal("install from the local index failed")
		}
	}
}
