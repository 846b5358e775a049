//go:build linux

package e2blocal

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestAuth(t *testing.T) {
	open := startRuntime(t, Config{})
	locked := startRuntime(t, Config{APIKey: "e2b_feedface"})
	cases := []struct {
		name string
		rt   *Runtime
		key  string
		want int
	}{
		{"no key", open, "", http.StatusUnauthorized},
		{"not e2b format", open, "sk_123", http.StatusUnauthorized},
		{"non-hex", open, "e2b_xyz", http.StatusUnauthorized},
		{"any e2b key", open, "e2b_abc123", http.StatusOK},
		{"wrong configured key", locked, "e2b_abc123", http.StatusUnauthorized},
		{"configured key", locked, "e2b_feedface", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string]string{}
			if c.key != "" {
				hdr["X-API-KEY"] = c.key
			}
			r := do(t, "GET", c.rt.APIURL()+"/v2/sandboxes", nil, hdr)
			if r.status != c.want {
				t.Fatalf("status %d, want %d: %s", r.status, c.want, r.body)
			}
			if c.want != http.StatusOK {
				assertErrorBody(t, r, c.want)
			}
		})
	}
	// Health needs no key.
	if r := do(t, "GET", locked.APIURL()+"/health", nil, nil); r.status != http.StatusOK {
		t.Fatalf("health: %d", r.status)
	}
}

// assertErrorBody checks E2B's {"code","message"} with code == status.
func assertErrorBody(t testing.TB, r reply, status int) {
	t.Helper()
	var e struct {
		Code    *int    `json:"code"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Code == nil || e.Message == nil {
		t.Fatalf("not an E2B error body (%v): %s", err, r.body)
	}
	if *e.Code != status || *e.Message == "" {
		t.Fatalf("error body %s, want code %d and a message", r.body, status)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error content type %q", ct)
	}
}

func TestCreateShapes(t *testing.T) {
	rt := startRuntime(t, Config{Templates: map[string]string{"my-custom": TemplateBase}})
	cases := []struct {
		name      string
		path      string
		body      map[string]any
		wantToken bool
		timeout   time.Duration
	}{
		{"v1 default", "/sandboxes", map[string]any{"templateID": "base"}, false, 15 * time.Second},
		{"v1 secure", "/sandboxes", map[string]any{"templateID": "base", "secure": true, "timeout": 60}, true, 60 * time.Second},
		{"v2 default", "/v2/sandboxes", map[string]any{"templateID": "code-interpreter-v1"}, true, 300 * time.Second},
		{"v2 custom template", "/v2/sandboxes", map[string]any{"templateID": "my-custom", "timeout": 30, "metadata": map[string]string{"a": "b"}}, true, 30 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := time.Now()
			r := api(t, rt, "POST", c.path, c.body)
			if r.status != http.StatusCreated {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			var raw map[string]any
			r.decode(t, &raw)
			for _, k := range []string{"templateID", "sandboxID", "clientID", "envdVersion"} {
				if _, ok := raw[k].(string); !ok {
					t.Fatalf("missing %s in %s", k, r.body)
				}
			}
			if raw["clientID"] != clientID || raw["envdVersion"] != envdVersion || raw["templateID"] != c.body["templateID"] {
				t.Fatalf("unexpected fields: %s", r.body)
			}
			if v, ok := raw["domain"]; !ok || v != nil {
				t.Fatalf("domain must be null: %s", r.body)
			}
			if _, has := raw["envdAccessToken"]; has != c.wantToken {
				t.Fatalf("envdAccessToken present=%v, want %v: %s", has, c.wantToken, r.body)
			}
			id := raw["sandboxID"].(string)
			if len(id) != 20 || !validID.MatchString(id) {
				t.Fatalf("bad id %q", id)
			}
			var d detailBody
			g := api(t, rt, "GET", "/sandboxes/"+id, nil)
			if g.status != http.StatusOK {
				t.Fatalf("get: %d %s", g.status, g.body)
			}
			g.decode(t, &d)
			if d.State != "running" || d.SandboxID != id || d.Lifecycle.OnTimeout != "kill" || d.MemoryMB <= 0 || d.CPUCount < 1 {
				t.Fatalf("detail: %s", g.body)
			}
			if lifetime := d.EndAt.Sub(before); lifetime < c.timeout-time.Second || lifetime > c.timeout+5*time.Second {
				t.Fatalf("endAt %v is %v after create, want about %v", d.EndAt, lifetime, c.timeout)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	rt := startRuntime(t, Config{})
	sb := createSandbox(t, rt, nil)
	unknown := "aaaaaaaaaaaaaaaaaaaa"
	cases := []struct {
		method, path string
		body         any
		want         int
	}{
		{"POST", "/sandboxes", `{"templateID": `, http.StatusBadRequest},
		{"POST", "/v2/sandboxes", `[1,2]`, http.StatusBadRequest},
		{"POST", "/v2/sandboxes", `{}`, http.StatusBadRequest},
		{"POST", "/v2/sandboxes", map[string]any{"templateID": "base", "timeout": -1}, http.StatusBadRequest},
		{"POST", "/v2/sandboxes", map[string]any{"templateID": "base", "timeout": "10"}, http.StatusBadRequest},
		// Past 24 h, and far enough past to overflow a Duration.
		{"POST", "/v2/sandboxes", map[string]any{"templateID": "base", "timeout": 86401}, http.StatusBadRequest},
		{"POST", "/sandboxes", map[string]any{"templateID": "base", "timeout": int64(1e18)}, http.StatusBadRequest},
		{"POST", "/sandboxes/" + sb.SandboxID + "/timeout", map[string]any{"timeout": int64(1e18)}, http.StatusBadRequest},
		{"POST", "/sandboxes/" + sb.SandboxID + "/connect", map[string]any{"timeout": int64(9e18)}, http.StatusBadRequest},
		{"POST", "/v2/sandboxes", map[string]any{"templateID": "base", "volumeMounts": []map[string]string{{"name": "v", "path": "/v"}}}, http.StatusBadRequest},
		{"GET", "/sandboxes/" + unknown, nil, http.StatusNotFound},
		{"GET", "/sandboxes/Not-An-Id!", nil, http.StatusNotFound},
		{"DELETE", "/sandboxes/" + unknown, nil, http.StatusNotFound},
		{"POST", "/sandboxes/" + unknown + "/timeout", map[string]any{"timeout": 10}, http.StatusNotFound},
		{"POST", "/sandboxes/" + unknown + "/refreshes", nil, http.StatusNotFound},
		{"POST", "/sandboxes/" + unknown + "/pause", nil, http.StatusNotFound},
		{"POST", "/sandboxes/" + unknown + "/resume", nil, http.StatusNotFound},
		{"POST", "/sandboxes/" + unknown + "/connect", map[string]any{"timeout": 10}, http.StatusNotFound},
		{"POST", "/v2/sandboxes/" + unknown + "/connect", nil, http.StatusNotFound},
		{"GET", "/sandboxes/" + unknown + "/metrics", nil, http.StatusNotFound},
		{"POST", "/sandboxes/" + sb.SandboxID + "/timeout", `{}`, http.StatusBadRequest},
		{"POST", "/sandboxes/" + sb.SandboxID + "/timeout", `{"timeout":`, http.StatusBadRequest},
		{"POST", "/sandboxes/" + sb.SandboxID + "/refreshes", map[string]any{"duration": 4000}, http.StatusBadRequest},
		{"POST", "/sandboxes/" + sb.SandboxID + "/connect", `{}`, http.StatusBadRequest},
		{"POST", "/sandboxes/" + sb.SandboxID + "/resume", `{}`, http.StatusConflict},
		{"GET", "/v2/sandboxes?limit=0", nil, http.StatusBadRequest},
		{"GET", "/v2/sandboxes?limit=101", nil, http.StatusBadRequest},
		{"GET", "/v2/sandboxes?state=sleeping", nil, http.StatusBadRequest},
		{"GET", "/v2/sandboxes?order=sideways", nil, http.StatusBadRequest},
		{"GET", "/v2/sandboxes?nextToken=%25%25", nil, http.StatusBadRequest},
		{"GET", "/v2/sandboxes?metadata=" + url.QueryEscape("a=%zz"), nil, http.StatusBadRequest},
		{"GET", "/sandboxes/metrics", nil, http.StatusBadRequest},
		{"GET", "/no/such/route", nil, http.StatusNotFound},
		{"POST", "/sandboxes/" + sb.SandboxID + "/fork", `{}`, http.StatusNotImplemented},
		{"POST", "/sandboxes/" + sb.SandboxID + "/snapshots", `{}`, http.StatusNotImplemented},
		{"PUT", "/sandboxes/" + sb.SandboxID + "/network", `{}`, http.StatusNotImplemented},
		{"POST", "/v3/templates", `{}`, http.StatusNotImplemented},
		{"PUT", "/sandboxes", nil, http.StatusNotFound},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			r := api(t, rt, c.method, c.path, c.body)
			if r.status != c.want {
				t.Fatalf("status %d, want %d: %s", r.status, c.want, r.body)
			}
			assertErrorBody(t, r, c.want)
		})
	}
	// None of that hurt the sandbox.
	if r := sbx(t, rt, sb.SandboxID, "49983", "GET", "/health", nil); r.status != http.StatusNoContent {
		t.Fatalf("sandbox health after bad input: %d", r.status)
	}
}

func TestList(t *testing.T) {
	rt := startRuntime(t, Config{})
	var ids []string
	for i, md := range []map[string]string{
		{"team": "a&b=c", "n": "0"},
		{"team": "a&b=c", "n": "1"},
		{"team": "other", "n": "2"},
	} {
		sb := createSandbox(t, rt, map[string]any{"templateID": "base", "metadata": md})
		ids = append(ids, sb.SandboxID)
		if i == 1 {
			if r := api(t, rt, "POST", "/sandboxes/"+sb.SandboxID+"/pause", nil); r.status != http.StatusNoContent {
				t.Fatalf("pause: %d %s", r.status, r.body)
			}
		}
	}
	// The SDK encodes the filter three times: each key and value, the
	// k=v&k=v string, and the query parameter.
	sdkFilter := func(md map[string]string) string {
		inner := url.Values{}
		for k, v := range md {
			inner.Set(url.QueryEscape(k), url.QueryEscape(v))
		}
		return url.QueryEscape(inner.Encode())
	}
	list := func(q string) (reply, []listedBody) {
		r := api(t, rt, "GET", "/v2/sandboxes?"+q, nil)
		if r.status != http.StatusOK {
			t.Fatalf("list %s: %d %s", q, r.status, r.body)
		}
		var out []listedBody
		r.decode(t, &out)
		return r, out
	}
	idsOf := func(bs []listedBody) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.SandboxID)
		}
		return out
	}
	cases := []struct {
		name  string
		query string
		want  []string
	}{
		{"all, newest first", "", []string{ids[2], ids[1], ids[0]}},
		{"ascending", "order=asc", []string{ids[0], ids[1], ids[2]}},
		{"running", "state=running", []string{ids[2], ids[0]}},
		{"paused", "state=paused", []string{ids[1]}},
		{"both states", "state=running,paused&order=asc", []string{ids[0], ids[1], ids[2]}},
		{"metadata with reserved characters", "metadata=" + sdkFilter(map[string]string{"team": "a&b=c"}), []string{ids[1], ids[0]}},
		{"metadata two keys", "metadata=" + sdkFilter(map[string]string{"team": "a&b=c", "n": "0"}), []string{ids[0]}},
		{"metadata and state", "state=running&metadata=" + sdkFilter(map[string]string{"team": "a&b=c"}), []string{ids[0]}},
		{"metadata no match", "metadata=" + sdkFilter(map[string]string{"team": "nobody"}), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, got := list(c.query)
			if g := idsOf(got); !equalStrings(g, c.want) {
				t.Fatalf("got %v, want %v", g, c.want)
			}
			if r.header.Get("X-Total-Running") != "2" {
				t.Fatalf("X-Total-Running %q", r.header.Get("X-Total-Running"))
			}
			if r.header.Get("X-Next-Token") != "" {
				t.Fatalf("unexpected next token on a complete page")
			}
		})
	}
	for _, order := range []struct {
		name, query string
		want        []string
	}{
		{"ascending", "&order=asc", ids},
		{"descending (the default)", "", []string{ids[2], ids[1], ids[0]}},
	} {
		t.Run("pagination "+order.name, func(t *testing.T) {
			var seen []string
			q := "limit=1" + order.query
			for page := 0; ; page++ {
				if page > 5 {
					t.Fatalf("pagination does not end: %v", seen)
				}
				r, got := list(q)
				seen = append(seen, idsOf(got)...)
				next := r.header.Get("X-Next-Token")
				if next == "" {
					break
				}
				q = "limit=1" + order.query + "&nextToken=" + url.QueryEscape(next)
			}
			if !equalStrings(seen, order.want) {
				t.Fatalf("pages gave %v, want %v", seen, order.want)
			}
		})
	}
	t.Run("v1 lists running only", func(t *testing.T) {
		r := api(t, rt, "GET", "/sandboxes?metadata="+sdkFilter(map[string]string{"team": "a&b=c"}), nil)
		var got []listedBody
		r.decode(t, &got)
		if g := idsOf(got); r.status != http.StatusOK || !equalStrings(g, []string{ids[0]}) {
			t.Fatalf("v1 list: %d %v", r.status, g)
		}
		if got[0].State != "running" || got[0].Metadata["n"] != "0" || got[0].ClientID != clientID {
			t.Fatalf("v1 item %+v", got[0])
		}
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
