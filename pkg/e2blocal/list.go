//go:build linux

package e2blocal

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// listQuery is a parsed GET /v2/sandboxes query.
type listQuery struct {
	metadata     map[string]string
	states       map[string]bool
	asc          bool
	limit        int
	startedAfter time.Time
	template     string
	after        *cursor
}

type cursor struct {
	startedAt time.Time
	id        string
}

// parseMetadataFilter undoes the SDK's encoding of the metadata query: the
// query parameter is decoded once by the URL parser, then the whole value is
// unescaped, split into k=v pairs on '&' and '=', and each key and value is
// unescaped again.
func parseMetadataFilter(raw string) (map[string]string, error) {
	if raw == "" {
		return nil, nil
	}
	whole, err := url.QueryUnescape(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid metadata filter: %w", err)
	}
	out := map[string]string{}
	for _, pair := range strings.Split(whole, "&") {
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("invalid metadata filter %q: expected key=value", pair)
		}
		if k, err = url.QueryUnescape(k); err != nil {
			return nil, fmt.Errorf("invalid metadata key: %w", err)
		}
		if v, err = url.QueryUnescape(v); err != nil {
			return nil, fmt.Errorf("invalid metadata value: %w", err)
		}
		out[k] = v
	}
	return out, nil
}

func parseListQuery(q url.Values) (listQuery, error) {
	lq := listQuery{limit: 100}
	var err error
	if lq.metadata, err = parseMetadataFilter(q.Get("metadata")); err != nil {
		return lq, err
	}
	if raw := q.Get("state"); raw != "" {
		lq.states = map[string]bool{}
		for _, st := range strings.Split(raw, ",") {
			if st != "running" && st != "paused" {
				return lq, fmt.Errorf("invalid state %q: expected running or paused", st)
			}
			lq.states[st] = true
		}
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		lq.asc = true
	default:
		return lq, fmt.Errorf("invalid order %q: expected asc or desc", q.Get("order"))
	}
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 100 {
			return lq, fmt.Errorf("invalid limit %q: expected 1..100", raw)
		}
		lq.limit = n
	}
	if raw := q.Get("startedAfter"); raw != "" {
		if lq.startedAfter, err = time.Parse(time.RFC3339Nano, raw); err != nil {
			return lq, fmt.Errorf("invalid startedAfter: %w", err)
		}
	}
	lq.template = q.Get("template")
	if raw := q.Get("nextToken"); raw != "" {
		c, err := decodeCursor(raw)
		if err != nil {
			return lq, err
		}
		lq.after = &c
	}
	return lq, nil
}

// The cursor is opaque to clients; like infra it is base64url of
// "<RFC3339Nano start>__<sandboxID>".
func encodeCursor(c cursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.startedAt.Format(time.RFC3339Nano) + "__" + c.id))
}

func decodeCursor(raw string) (cursor, error) {
	data, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(raw, "="))
	if err != nil {
		return cursor{}, errors.New("invalid nextToken")
	}
	ts, id, ok := strings.Cut(string(data), "__")
	if !ok {
		return cursor{}, errors.New("invalid nextToken")
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return cursor{}, errors.New("invalid nextToken")
	}
	return cursor{startedAt: t, id: id}, nil
}

func (lq listQuery) matches(b listedBody) bool {
	if lq.states != nil && !lq.states[b.State] {
		return false
	}
	if lq.template != "" && b.TemplateID != lq.template && b.Alias != lq.template {
		return false
	}
	if !lq.startedAfter.IsZero() && !b.StartedAt.After(lq.startedAfter) {
		return false
	}
	for k, v := range lq.metadata {
		if got, ok := b.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// before reports whether a sorts before b in the listing order.
func (lq listQuery) before(a, b cursor) bool {
	if !a.startedAt.Equal(b.startedAt) {
		return a.startedAt.Before(b.startedAt) == lq.asc
	}
	if a.id == b.id {
		// Nothing sorts before itself: the page after a cursor must not
		// hold the cursor's own sandbox again.
		return false
	}
	return (a.id < b.id) == lq.asc
}

func (rt *Runtime) listedAll() []listedBody {
	rt.mu.Lock()
	all := make([]*sandbox, 0, len(rt.sandboxes))
	for _, s := range rt.sandboxes {
		all = append(all, s)
	}
	rt.mu.Unlock()
	out := make([]listedBody, 0, len(all))
	for _, s := range all {
		out = append(out, rt.listed(s))
	}
	return out
}

func (rt *Runtime) handleListV2(w http.ResponseWriter, r *http.Request) {
	lq, err := parseListQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	all := rt.listedAll()
	running := 0
	var page []listedBody
	for _, b := range all {
		if b.State == "running" {
			running++
		}
		if !lq.matches(b) {
			continue
		}
		if lq.after != nil && !lq.before(*lq.after, cursor{b.StartedAt, b.SandboxID}) {
			continue
		}
		page = append(page, b)
	}
	sort.Slice(page, func(i, j int) bool {
		return lq.before(cursor{page[i].StartedAt, page[i].SandboxID}, cursor{page[j].StartedAt, page[j].SandboxID})
	})
	if len(page) > lq.limit {
		page = page[:lq.limit]
		last := page[len(page)-1]
		w.Header().Set("X-Next-Token", encodeCursor(cursor{last.StartedAt, last.SandboxID}))
	}
	w.Header().Set("X-Total-Running", strconv.Itoa(running))
	if page == nil {
		page = []listedBody{}
	}
	writeJSON(w, http.StatusOK, page)
}

// handleListV1 is the deprecated list: running sandboxes, metadata filter only.
func (rt *Runtime) handleListV1(w http.ResponseWriter, r *http.Request) {
	md, err := parseMetadataFilter(r.URL.Query().Get("metadata"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	lq := listQuery{metadata: md, states: map[string]bool{"running": true}}
	out := []listedBody{}
	for _, b := range rt.listedAll() {
		if lq.matches(b) {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	writeJSON(w, http.StatusOK, out)
}
