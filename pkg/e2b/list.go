package e2b

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// ListParams filters and pages List.
type ListParams struct {
	// Metadata keeps sandboxes whose metadata contains every pair.
	Metadata map[string]string
	// States keeps sandboxes in one of these states; empty means all.
	States []SandboxState
	// Template keeps sandboxes of this template ID or alias.
	Template string
	// Limit is the page size (1..100); zero lets the server choose (100).
	Limit int
	// NextToken resumes a listing where a previous page ended.
	NextToken string
}

// Page is one page of List results.
type Page struct {
	Sandboxes []SandboxInfo
	// NextToken continues the listing; empty on the last page.
	NextToken string
}

// ListPage fetches one page of sandboxes.
func (c *Client) ListPage(ctx context.Context, p ListParams) (Page, error) {
	q := url.Values{}
	if len(p.Metadata) > 0 {
		q.Set("metadata", encodeMetadataFilter(p.Metadata))
	}
	if len(p.States) > 0 {
		s := make([]string, len(p.States))
		for i, st := range p.States {
			s[i] = string(st)
		}
		q.Set("state", strings.Join(s, ","))
	}
	if p.Template != "" {
		q.Set("template", p.Template)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.NextToken != "" {
		q.Set("nextToken", p.NextToken)
	}
	var out []SandboxInfo
	res, err := c.doAPI(ctx, apiCall{op: "sandboxes.list", method: http.MethodGet,
		path: "/v2/sandboxes", query: q, idempotent: true}, &out)
	if err != nil {
		return Page{}, err
	}
	return Page{Sandboxes: out, NextToken: res.header.Get("X-Next-Token")}, nil
}

// List iterates over every sandbox matching p, fetching pages lazily as the
// loop advances. A failed page is yielded as an error and ends the iteration.
//
//	for sb, err := range client.List(ctx, e2b.ListParams{States: []e2b.SandboxState{e2b.StateRunning}}) {
//		if err != nil { return err }
//		fmt.Println(sb.SandboxID)
//	}
func (c *Client) List(ctx context.Context, p ListParams) iter.Seq2[SandboxInfo, error] {
	return func(yield func(SandboxInfo, error) bool) {
		for {
			page, err := c.ListPage(ctx, p)
			if err != nil {
				yield(SandboxInfo{}, err)
				return
			}
			for _, sb := range page.Sandboxes {
				if !yield(sb, nil) {
					return
				}
			}
			if page.NextToken == "" || page.NextToken == p.NextToken {
				return
			}
			p.NextToken = page.NextToken
		}
	}
}

// encodeMetadataFilter builds the metadata query value like the JS SDK: each
// key and value escaped, then the pairs form-encoded once more; the query
// encoding adds the third layer the API's decoder expects.
func encodeMetadataFilter(md map[string]string) string {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = formEscape(jsURIComponent(k)) + "=" + formEscape(jsURIComponent(md[k]))
	}
	return strings.Join(pairs, "&")
}

// jsURIComponent mirrors JavaScript's encodeURIComponent.
func jsURIComponent(s string) string {
	const keep = "-_.!~*'()"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte(keep, ch) >= 0 {
			b.WriteByte(ch)
			continue
		}
		b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(ch)>>4, 16)) + strings.ToUpper(strconv.FormatUint(uint64(ch)&15, 16)))
	}
	return b.String()
}

// formEscape mirrors URLSearchParams serialization (space as '+').
func formEscape(s string) string { return url.QueryEscape(s) }
