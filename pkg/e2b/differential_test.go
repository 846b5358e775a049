package e2b_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
)

// deliberate lists every difference TestDifferentialJSSDK finds between
// the requests of the official JS SDK and of this client, keyed by
// "request | field" (in whichever step it occurs), with why it is kept. A
// difference not listed fails the test, and so does a listed one that no
// longer occurs.
var deliberate = map[string]string{}

func init() {
	const (
		acceptGzip = "connect-go offers gzip on every stream; envd (a connect-go server) may then compress " +
			"what it sends, which the client decodes: same messages, fewer bytes"
		streamDeadline = "the command's lifetime travels as the context's deadline, which connect-go turns " +
			"into the header when the request leaves, a millisecond or so after it was set"
		unaryDeadline = "each unary RPC is bounded by Config.RequestTimeout through its context and connect-go " +
			"tells envd, which then drops work nobody waits for; the JS SDK only aborts on its side"
		signedRoute = "signed URLs are for parties that cannot add routing headers, so with a SandboxURL the " +
			"client names the sandbox in the path (/_sandboxes/<id>/49983), which the local runtime strips; " +
			"the JS SDK puts the bare SandboxURL in them, which nothing can route (see Config.SandboxURL)"
		noBodyType = "the code interpreter SDK labels requests without a body as JSON; the client sends " +
			"Content-Type only with a body"
		interpToken = "the code interpreter SDK sends the envd access token with /execute only; the client " +
			"sends it with every interpreter request alike, which a proxy checking it on that port needs " +
			"and one that does not ignores"
		execTimeout = "the execution's timeout travels to the interpreter, so the local runtime interrupts " +
			"the cell and ends the stream with what arrived; E2B's interpreter ignores the field"
	)
	for key, why := range map[string]string{
		"POST /process.Process/Start | header Connect-Accept-Encoding":    acceptGzip,
		"POST /process.Process/Start | header Connect-Timeout-Ms":         streamDeadline,
		"POST /process.Process/Connect | header Connect-Accept-Encoding":  acceptGzip,
		"POST /process.Process/Connect | header Connect-Timeout-Ms":       streamDeadline,
		"POST /filesystem.Filesystem/ListDir | header Connect-Timeout-Ms": unaryDeadline,
		"POST /filesystem.Filesystem/Stat | header Connect-Timeout-Ms":    unaryDeadline,
		"POST /filesystem.Filesystem/MakeDir | header Connect-Timeout-Ms": unaryDeadline,
		"POST /filesystem.Filesystem/Move | header Connect-Timeout-Ms":    unaryDeadline,
		"POST /filesystem.Filesystem/Remove | header Connect-Timeout-Ms":  unaryDeadline,
		"POST /process.Process/List | header Connect-Timeout-Ms":          unaryDeadline,
		"POST /process.Process/SendInput | header Connect-Timeout-Ms":     unaryDeadline,
		"POST /process.Process/SendSignal | header Connect-Timeout-Ms":    unaryDeadline,
		"GET /files | route":                                         signedRoute,
		"POST /files | route":                                        signedRoute,
		"POST /contexts | header X-Access-Token":                     interpToken,
		"GET /contexts | header X-Access-Token":                      interpToken,
		"POST /contexts/{contextID}/restart | header X-Access-Token": interpToken,
		"DELETE /contexts/{contextID} | header X-Access-Token":       interpToken,
		"GET /contexts | header Content-Type":                        noBodyType,
		"POST /contexts/{contextID}/restart | header Content-Type":   noBodyType,
		"DELETE /contexts/{contextID} | header Content-Type":         noBodyType,
		"POST /execute | body json.timeout":                          execTimeout,
	} {
		deliberate[key] = why
	}
}

// meaningfulHeaders are the request headers compared: authentication,
// routing, the envd user, the Connect protocol and content negotiation.
var meaningfulHeaders = []string{
	"X-Api-Key", "X-Access-Token", "E2b-Sandbox-Id", "E2b-Sandbox-Port", "Authorization",
	"Connect-Protocol-Version", "Connect-Timeout-Ms", "Connect-Content-Encoding", "Connect-Accept-Encoding",
	"Content-Type", "Content-Encoding", "Keepalive-Ping-Interval", "E2b-Traffic-Access-Token",
}

// TestDifferentialJSSDK runs one scenario through the official E2B JS SDK
// (scripts/differential/scenario.mjs) and through this client, each through
// a recording proxy in front of the local runtime, and compares what they
// sent, request by request: method, path, query, the meaningful headers and
// the bodies field by field (Connect messages decoded through their proto
// types, multipart uploads part by part).
func TestDifferentialJSSDK(t *testing.T) {
	e2btest.NeedsSandboxes(t)
	e2btest.LocalOnly(t, "the SDK and the client are compared through a proxy in front of the local runtime")
	script, err := differentialScript()
	if err != nil {
		t.Fatalf("the differential test needs node and the npm SDKs: %v (run scripts/setup.sh; -short skips it)", err)
	}
	rec := &recorder{}
	apiProxy := httptest.NewServer(rec.proxy(local.APIURL()))
	defer apiProxy.Close()
	sbxProxy := httptest.NewServer(rec.proxy(local.SandboxURL()))
	defer sbxProxy.Close()

	rec.begin("js")
	ctx := testCtx(t)
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), "E2B_API_KEY="+testAPIKey, "E2B_API_URL="+apiProxy.URL,
		"E2B_SANDBOX_URL="+sbxProxy.URL, "E2B_DEBUG=", "E2B_DOMAIN=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the JS scenario failed: %v\n%s", err, out)
	}
	rec.begin("go")
	goScenario(t, apiProxy.URL, sbxProxy.URL)
	rec.begin("")

	js, goReqs := rec.side("js"), rec.side("go")
	diffs, table := compareSides(js, goReqs)
	t.Logf("operation | requests (JS, Go) | differences\n%s", table)
	seen := map[string]bool{}
	for _, d := range diffs {
		key := d.request + " | " + d.field
		seen[key] = true
		if why, ok := deliberate[key]; ok {
			t.Logf("kept: %s | %s: JS %s, Go %s (%s)", d.step, key, d.js, d.goV, why)
			continue
		}
		t.Errorf("%s | %s: JS sends %s, Go sends %s", d.step, key, d.js, d.goV)
	}
	for k := range deliberate {
		if !seen[k] {
			t.Errorf("deliberate difference %q no longer occurs: remove it from the table", k)
		}
	}
}

// goScenario is scenario.mjs through this client, step for step.
func goScenario(t *testing.T, apiURL, sandboxURL string) {
	ctx := testCtx(t)
	step := func(name string) {
		t.Helper()
		resp, err := http.Get(apiURL + "/__step?name=" + url.QueryEscape(name))
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("step marker %s: %v %v", name, resp, err)
		}
		resp.Body.Close()
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	expect := func(what string, got, want any) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
	c, err := e2b.New(e2b.Config{APIKey: testAPIKey, APIURL: apiURL, SandboxURL: sandboxURL})
	must("client", err)
	defer c.Close()
	metadata := map[string]string{"suite": "differential", "side": "both"}

	step("create")
	sb, err := c.Create(ctx, e2b.CreateParams{Template: "code-interpreter-v1", Metadata: metadata,
		Envs: map[string]string{"GLOBAL": "g"}, Timeout: 10 * time.Minute})
	must("create", err)
	// Killed past the proxy if the scenario stops half-way.
	t.Cleanup(func() { _ = newClient(t).Kill(context.Background(), sb.ID) })

	step("command with envs and cwd")
	res, err := sb.Commands().Run(ctx, `echo "$GLOBAL $LOCAL $(pwd)"`, e2b.CommandOptions{Envs: map[string]string{"LOCAL": "l"}, Cwd: "/tmp"})
	must("run", err)
	expect("command stdout", res.Stdout, "g l /tmp\n")

	step("background command and connect")
	bg, err := sb.Commands().Start(ctx, "sleep 2; echo bg", e2b.CommandOptions{})
	must("start", err)
	bg.Disconnect()
	attached, err := sb.Commands().Connect(ctx, bg.PID, e2b.ConnectOptions{})
	must("connect", err)
	res, err = attached.Wait(ctx)
	must("wait", err)
	expect("background stdout", res.Stdout, "bg\n")

	step("write several files")
	_, err = sb.Files().WriteFiles(ctx, []e2b.WriteEntry{{Path: "/home/user/d/a.txt", Data: strings.NewReader("A")},
		{Path: "d/b.txt", Data: strings.NewReader("BB")}}, e2b.WriteOptions{})
	must("write", err)

	step("read")
	b, err := sb.Files().ReadAll(ctx, "d/a.txt", e2b.ReadOptions{})
	must("read", err)
	expect("read", string(b), "A")

	step("list")
	entries, err := sb.Files().List(ctx, "d", e2b.ListOptions{})
	must("list", err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	expect("list", strings.Join(names, ","), "a.txt,b.txt")

	step("stat")
	st, err := sb.Files().Stat(ctx, "d/b.txt", e2b.FileOptions{})
	must("stat", err)
	expect("stat size", st.Size, int64(2))

	step("rename")
	_, err = sb.Files().Rename(ctx, "d/b.txt", "d/c.txt", e2b.FileOptions{})
	must("rename", err)

	step("remove")
	must("remove", sb.Files().Remove(ctx, "d/a.txt", e2b.FileOptions{}))

	step("make dir and exists")
	made, err := sb.Files().MakeDir(ctx, "d/sub", e2b.FileOptions{})
	must("makeDir", err)
	expect("makeDir", made, true)
	exists, err := sb.Files().Exists(ctx, "d/sub", e2b.FileOptions{})
	must("exists", err)
	expect("exists", exists, true)

	step("process with stdin, listed and killed")
	cat, err := sb.Commands().Start(ctx, "cat", e2b.CommandOptions{Stdin: true})
	must("start cat", err)
	must("send stdin", sb.Commands().SendStdin(ctx, cat.PID, []byte("hi\n")))
	procs, err := sb.Commands().List(ctx)
	must("list processes", err)
	expect("listed cat", slices.ContainsFunc(procs, func(p e2b.ProcessInfo) bool { return p.PID == cat.PID }), true)
	killed, err := sb.Commands().Kill(ctx, cat.PID)
	must("kill cat", err)
	expect("kill cat", killed, true)
	_, _ = cat.Wait(ctx)

	step("sandbox info")
	info, err := sb.Info(ctx)
	must("info", err)
	expect("info", info.SandboxID, sb.ID)

	step("command as a user with a timeout")
	res, err = sb.Commands().Run(ctx, "whoami", e2b.CommandOptions{User: "user", Timeout: 5 * time.Second})
	must("whoami", err)
	expect("whoami", res.Stdout, "user\n")

	step("write one file as a user")
	_, err = sb.Files().Write(ctx, "d/one.txt", strings.NewReader("one"), e2b.WriteOptions{User: "user"})
	must("write one", err)

	step("read as a user")
	b, err = sb.Files().ReadAll(ctx, "d/one.txt", e2b.ReadOptions{User: "user"})
	must("read as a user", err)
	expect("read as a user", string(b), "one")

	step("signed download URL")
	down, err := sb.DownloadURL("d/c.txt", e2b.SignedURLOptions{Expires: time.Minute})
	must("download URL", err)
	fetchSigned(t, sb.ID, down, http.MethodGet, "")

	step("signed upload URL")
	up, err := sb.UploadURL("d/up.txt", e2b.SignedURLOptions{Expires: time.Minute})
	must("upload URL", err)
	fetchSigned(t, sb.ID, up, http.MethodPost, "uploaded")

	step("run code in a context")
	cc, err := sb.CreateContext(ctx, e2b.CreateContextOptions{Cwd: "/tmp"})
	must("create context", err)
	exec, err := sb.RunCode(ctx, "import os\nos.getcwd()", e2b.RunCodeOptions{ContextID: cc.ID})
	must("run code", err)
	expect("run code", exec.Text(), "/tmp")

	step("code contexts listed, restarted, removed")
	contexts, err := sb.ListContexts(ctx)
	must("list contexts", err)
	expect("contexts listed", slices.ContainsFunc(contexts, func(x e2b.CodeContext) bool { return x.ID == cc.ID }), true)
	must("restart context", sb.RestartContext(ctx, cc.ID))
	must("remove context", sb.RemoveContext(ctx, cc.ID))

	step("run code with envs")
	exec, err = sb.RunCode(ctx, "import os\nos.environ[\"V\"]", e2b.RunCodeOptions{Envs: map[string]string{"V": "x"}})
	must("run code with envs", err)
	expect("run code with envs", exec.Text(), "x")

	step("set timeout")
	must("set timeout", sb.SetTimeout(ctx, 5*time.Minute))

	step("pause")
	must("pause", sb.Pause(ctx))

	step("connect")
	resumed, err := c.Connect(ctx, sb.ID, e2b.ConnectParams{Timeout: 5 * time.Minute})
	must("connect", err)

	step("list with metadata filters")
	page, err := c.ListPage(ctx, e2b.ListParams{Metadata: metadata, States: []e2b.SandboxState{e2b.StateRunning, e2b.StatePaused}, Limit: 10})
	must("list", err)
	expect("listed", slices.ContainsFunc(page.Sandboxes, func(s e2b.SandboxInfo) bool { return s.SandboxID == sb.ID }), true)

	step("kill")
	must("kill", c.Kill(ctx, resumed.ID))

	step("end")
}

// fetchSigned uses a signed URL as scenario.mjs does: with the routing
// headers, and an upload as a multipart form with one file.
func fetchSigned(t *testing.T, id, u, method, body string) {
	t.Helper()
	var r io.Reader
	ctype := ""
	if body != "" {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", "up.txt")
		_, _ = io.WriteString(fw, body)
		_ = mw.Close()
		r, ctype = &buf, mw.FormDataContentType()
	}
	req, err := http.NewRequest(method, u, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("E2b-Sandbox-Id", id)
	req.Header.Set("E2b-Sandbox-Port", "49983")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s %s", method, u, resp.Status, b)
	}
}

// differentialScript finds scenario.mjs and checks that node and the SDKs
// it imports are installed.
func differentialScript() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	dir, err := filepath.Abs("../../scripts")
	if err != nil {
		return "", err
	}
	for _, p := range []string{"differential/scenario.mjs", "node_modules/e2b/package.json", "node_modules/@e2b/code-interpreter/package.json"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "differential", "scenario.mjs"), nil
}

// recorded is one request as it reached the proxy.
type recorded struct {
	side, step string
	method     string
	path       string
	query      url.Values
	header     http.Header
	body       []byte
}

// recorder keeps the requests of both sides, cut into steps by the
// /__step markers.
type recorder struct {
	mu       sync.Mutex
	current  string
	step     string
	requests []recorded
}

func (r *recorder) begin(side string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current, r.step = side, ""
}

func (r *recorder) side(side string) []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recorded
	for _, q := range r.requests {
		if q.side == side {
			out = append(out, q)
		}
	}
	return out
}

// proxy records each request and passes it on to target.
func (r *recorder) proxy(target string) http.Handler {
	u, _ := url.Parse(target)
	next := httputil.NewSingleHostReverseProxy(u)
	next.FlushInterval = -1
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/__step" {
			r.mu.Lock()
			r.step = req.URL.Query().Get("name")
			r.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.mu.Lock()
		r.requests = append(r.requests, recorded{side: r.current, step: r.step, method: req.Method, path: req.URL.Path,
			query: req.URL.Query(), header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

// difference is one field on which the sides differ.
type difference struct {
	step, request, field, js, goV string
}

// compareSides pairs the requests of each step by method and path, in
// order, and lists where they differ, with a table of what was compared.
func compareSides(js, goReqs []recorded) ([]difference, string) {
	var diffs []difference
	var table strings.Builder
	var steps []string
	for _, q := range append(slices.Clone(js), goReqs...) {
		if !slices.Contains(steps, q.step) {
			steps = append(steps, q.step)
		}
	}
	for _, step := range steps {
		a, b := normalizeStep(js, step), normalizeStep(goReqs, step)
		before := len(diffs)
		for _, k := range unionKeys(a, b) {
			la, lb := a[k], b[k]
			for i := range max(len(la), len(lb)) {
				switch {
				case i >= len(la):
					diffs = append(diffs, difference{step, k, "request", "nothing", "it"})
				case i >= len(lb):
					diffs = append(diffs, difference{step, k, "request", "it", "nothing"})
				default:
					diffs = append(diffs, diffFields(step, k, la[i], lb[i])...)
				}
			}
		}
		fmt.Fprintf(&table, "%s | %d, %d | %d\n", step, countStep(js, step), countStep(goReqs, step), len(diffs)-before)
	}
	return diffs, table.String()
}

func countStep(reqs []recorded, step string) int {
	n := 0
	for _, q := range reqs {
		if q.step == step {
			n++
		}
	}
	return n
}

func unionKeys(a, b map[string][]map[string]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func diffFields(step, request string, a, b map[string]string) []difference {
	var diffs []difference
	var fields []string
	for f := range a {
		fields = append(fields, f)
	}
	for f := range b {
		if _, ok := a[f]; !ok {
			fields = append(fields, f)
		}
	}
	sort.Strings(fields)
	for _, f := range fields {
		va, oka := a[f]
		vb, okb := b[f]
		if oka && okb && va == vb {
			continue
		}
		if !oka {
			va = "nothing"
		}
		if !okb {
			vb = "nothing"
		}
		diffs = append(diffs, difference{step, request, f, va, vb})
	}
	return diffs
}

// normalizeStep flattens the requests of one step into fields, grouped by
// "METHOD path", with the values that differ by nature (sandbox ids,
// tokens, pids, context ids, signatures and their expiry, multipart
// boundaries) replaced by placeholders.
func normalizeStep(reqs []recorded, step string) map[string][]map[string]string {
	out := map[string][]map[string]string{}
	for _, q := range reqs {
		if q.step != step {
			continue
		}
		n := newNormalizer(q)
		fields := map[string]string{}
		path := q.path
		if rest, ok := strings.CutPrefix(path, "/_sandboxes/"); ok {
			// The local runtime's routing by path (see Config.SandboxURL):
			// what follows is the path envd sees.
			parts := strings.SplitN(rest, "/", 3)
			if len(parts) == 3 {
				fields["route"] = "by path, port " + parts[1]
				path = "/" + parts[2]
			}
		}
		for k, vs := range q.query {
			v := strings.Join(vs, ",")
			switch k {
			case "signature":
				v = "{signature}"
			case "signature_expiration":
				v = "{expiration}"
			case "metadata":
				// A map: the order of its pairs means nothing.
				if m, err := url.ParseQuery(v); err == nil {
					v = m.Encode()
				}
			}
			fields["query "+k] = n.str(v)
		}
		for _, h := range meaningfulHeaders {
			if v := q.header.Values(h); len(v) > 0 {
				fields["header "+h] = n.header(h, strings.Join(v, ","))
			}
		}
		for k, v := range n.body() {
			fields["body "+k] = v
		}
		if rest, ok := strings.CutPrefix(path, "/contexts/"); ok {
			_, tail, _ := strings.Cut(rest, "/")
			path = strings.TrimSuffix("/contexts/{contextID}/"+tail, "/")
		}
		key := q.method + " " + n.str(path)
		out[key] = append(out[key], fields)
	}
	return out
}

type normalizer struct {
	q           recorded
	sandboxID   string
	accessToken string
}

func newNormalizer(q recorded) *normalizer {
	n := &normalizer{q: q, sandboxID: q.header.Get("E2b-Sandbox-Id"), accessToken: q.header.Get("X-Access-Token")}
	if n.sandboxID == "" {
		// Control-plane paths name the sandbox: [/v2]/sandboxes/<id>/...
		if _, rest, ok := strings.Cut(q.path, "/sandboxes/"); ok {
			n.sandboxID, _, _ = strings.Cut(rest, "/")
		}
	}
	return n
}

func (n *normalizer) str(s string) string {
	if n.sandboxID != "" {
		s = strings.ReplaceAll(s, n.sandboxID, "{sandboxID}")
	}
	if n.accessToken != "" {
		s = strings.ReplaceAll(s, n.accessToken, "{token}")
	}
	return s
}

func (n *normalizer) header(name, v string) string {
	if name == "Content-Type" {
		if mt, _, err := mime.ParseMediaType(v); err == nil && strings.HasPrefix(mt, "multipart/") {
			return mt
		}
	}
	return n.str(v)
}

// body flattens the request body into fields: JSON objects key by key,
// Connect messages through their proto type, multipart forms part by part.
func (n *normalizer) body() map[string]string {
	out := map[string]string{}
	if len(n.q.body) == 0 {
		return out
	}
	ct := n.q.header.Get("Content-Type")
	mt, params, _ := mime.ParseMediaType(ct)
	switch {
	case strings.HasPrefix(mt, "multipart/"):
		mr := multipart.NewReader(bytes.NewReader(n.q.body), params["boundary"])
		for i := 0; ; i++ {
			p, err := mr.NextPart()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					out["multipart"] = "unreadable: " + err.Error()
				}
				break
			}
			data, _ := io.ReadAll(p)
			prefix := fmt.Sprintf("part %d ", i)
			// Part.FileName keeps only the base name; envd takes the
			// whole of it as the path.
			_, disp, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
			out[prefix+"name"] = p.FormName()
			out[prefix+"filename"] = n.str(disp["filename"])
			out[prefix+"content-type"] = p.Header.Get("Content-Type")
			out[prefix+"data"] = string(data)
		}
	case mt == "application/connect+json" || mt == "application/connect+proto":
		for i, msg := range envelopes(n.q.body) {
			flattenInto(out, fmt.Sprintf("message %d", i), n.connectMessage(msg, mt == "application/connect+proto"))
		}
	case mt == "application/json" && n.rpcInput() != nil:
		flattenInto(out, "message", n.connectMessage(n.q.body, false))
	case mt == "application/proto":
		flattenInto(out, "message", n.connectMessage(n.q.body, true))
	case mt == "application/json":
		var v any
		if err := json.Unmarshal(n.q.body, &v); err != nil {
			out["json"] = "invalid: " + err.Error()
			break
		}
		flattenInto(out, "json", n.placeholders(v))
	default:
		out["raw"] = n.str(string(n.q.body))
	}
	return out
}

// rpcInput is the input type of the Connect method the request's path
// names (/package.Service/Method), nil for other paths.
func (n *normalizer) rpcInput() protoreflect.MessageDescriptor {
	svc, method, ok := strings.Cut(strings.TrimPrefix(n.q.path, "/"), "/")
	if !ok {
		return nil
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return nil
	}
	return md.Input()
}

// connectMessage decodes one Connect message through its proto type, so
// encodings that mean the same (a default value sent or left out, field
// name spellings) compare equal, and presence of optional fields counts.
func (n *normalizer) connectMessage(b []byte, binaryCodec bool) any {
	in := n.rpcInput()
	if in == nil {
		return "unknown method"
	}
	msg := dynamicpb.NewMessage(in)
	var err error
	if binaryCodec {
		err = proto.Unmarshal(b, msg)
	} else {
		err = protojson.Unmarshal(b, msg)
	}
	if err != nil {
		return "undecodable: " + err.Error()
	}
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	var v any
	_ = json.Unmarshal(js, &v)
	return n.placeholders(v)
}

// placeholders replaces the values that differ between any two runs.
func (n *normalizer) placeholders(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "pid":
				x[k] = "{pid}"
			case "context_id":
				x[k] = "{contextID}"
			default:
				x[k] = n.placeholders(e)
			}
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = n.placeholders(e)
		}
		return x
	case string:
		return n.str(x)
	}
	return v
}

// envelopes splits a Connect streaming body into its messages.
func envelopes(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 5 {
		size := int(binary.BigEndian.Uint32(b[1:5]))
		if 5+size > len(b) {
			break
		}
		out = append(out, b[5:5+size])
		b = b[5+size:]
	}
	return out
}

// flattenInto writes v's leaves into out under prefix: maps by key, lists
// by index, leaves as JSON.
func flattenInto(out map[string]string, prefix string, v any) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[prefix] = "{}"
		}
		for k, e := range x {
			flattenInto(out, prefix+"."+k, e)
		}
	case []any:
		if len(x) == 0 {
			out[prefix] = "[]"
		}
		for i, e := range x {
			flattenInto(out, fmt.Sprintf("%s[%d]", prefix, i), e)
		}
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
}
