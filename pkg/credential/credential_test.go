package credential_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/credential"
)

// header is one header line of a request, its name spelled as sent.
type header struct{ name, value string }

func asHTTP(hs []header) http.Header {
	h := http.Header{}
	for _, x := range hs {
		h.Add(x.name, x.value)
	}
	return h
}

func asMap(hs []header) map[string]string {
	m := map[string]string{}
	for _, x := range hs {
		m[x.name] = x.value
	}
	return m
}

// precedence is the documented order: Bearer, then X-API-Key; another
// Authorization scheme is ignored beside X-API-Key and refused alone.
var precedence = []struct {
	name    string
	headers []header
	want    string // empty: no credential
	why     string // in the refusal
}{
	{"nothing", nil, "", "an API key is required"},
	{"unrelated headers", []header{{"Accept", "*/*"}, {"Cookie", "k=sbx_x"}}, "", "an API key is required"},
	{"bearer", []header{{"Authorization", "Bearer tok-a"}}, "tok-a", ""},
	{"bearer, scheme in any case", []header{{"Authorization", "bEaReR tok-a"}}, "tok-a", ""},
	{"bearer, spaces trimmed", []header{{"Authorization", "  Bearer   tok-a  "}}, "tok-a", ""},
	{"bearer, name in lower case", []header{{"authorization", "Bearer tok-a"}}, "tok-a", ""},
	{"x-api-key", []header{{"X-API-Key", "tok-b"}}, "tok-b", ""},
	{"x-api-key, name in lower case", []header{{"x-api-key", " tok-b "}}, "tok-b", ""},
	{"bearer wins over x-api-key", []header{{"X-API-Key", "tok-b"}, {"Authorization", "Bearer tok-a"}}, "tok-a", ""},
	{"basic ignored beside x-api-key", []header{{"Authorization", "Basic dXNlcjpwdw=="}, {"X-API-Key", "tok-b"}}, "tok-b", ""},
	{"empty bearer falls to x-api-key", []header{{"Authorization", "Bearer "}, {"X-API-Key", "tok-b"}}, "tok-b", ""},
	{"token without scheme beside x-api-key", []header{{"Authorization", "tok-a"}, {"X-API-Key", "tok-b"}}, "tok-b", ""},
	{"basic alone", []header{{"Authorization", "Basic dXNlcjpwdw=="}}, "", "no Bearer token"},
	{"token without scheme alone", []header{{"Authorization", "tok-a"}}, "", "no Bearer token"},
	{"empty bearer alone", []header{{"Authorization", "Bearer"}}, "", "no Bearer token"},
	{"empty x-api-key", []header{{"X-API-Key", "  "}}, "", "an API key is required"},
	{"x-api-key twice, the same", []header{{"X-API-Key", "tok-b"}, {"x-api-key", "tok-b"}}, "tok-b", ""},
	{"x-api-key twice, different", []header{{"X-API-Key", "tok-b"}, {"x-api-key", "tok-c"}}, "", "X-API-Key twice"},
	{"authorization twice, different", []header{{"Authorization", "Bearer tok-a"}, {"authorization", "Bearer tok-c"}}, "", "Authorization twice"},
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	for _, c := range precedence {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for form, extract := range map[string]func() (string, error){
				"http.Header": func() (string, error) { return credential.FromHeader(asHTTP(c.headers)) },
				"map":         func() (string, error) { return credential.FromMap(asMap(c.headers)) },
			} {
				got, err := extract()
				if c.want != "" {
					if err != nil || got != c.want {
						t.Errorf("%s: got %q, %v; want %q", form, got, err, c.want)
					}
					continue
				}
				if got != "" || !errors.Is(err, credential.ErrMissing) || !strings.Contains(err.Error(), c.why) {
					t.Errorf("%s: got %q, %v; want ErrMissing saying %q", form, got, err, c.why)
				}
				if err != nil && !strings.Contains(err.Error(), "Authorization: Bearer <key> or X-API-Key: <key>") {
					t.Errorf("%s: the refusal %q does not say what to send", form, err)
				}
			}
		})
	}
}

// The map form must not depend on the order Go iterates the map in.
func TestFromMapIsDeterministic(t *testing.T) {
	t.Parallel()
	m := map[string]string{"X-API-Key": "tok-b", "Authorization": "Bearer tok-a", "x-api-key": "tok-b", "Accept": "*/*"}
	for range 200 {
		if got, err := credential.FromMap(m); err != nil || got != "tok-a" {
			t.Fatalf("got %q, %v", got, err)
		}
	}
}

// TestBearerFromMap: the Bearer-only extraction never reads X-API-Key and
// says what to send instead.
func TestBearerFromMap(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		headers []header
		want    string // empty: refused
	}{
		{"bearer", []header{{"Authorization", "Bearer tok-a"}}, "tok-a"},
		{"bearer, any case", []header{{"authorization", "  bEaReR  tok-a "}}, "tok-a"},
		{"bearer beside x-api-key", []header{{"Authorization", "Bearer tok-a"}, {"X-API-Key", "tok-b"}}, "tok-a"},
		{"x-api-key alone", []header{{"X-API-Key", "tok-b"}}, ""},
		{"basic beside x-api-key", []header{{"Authorization", "Basic dXNlcjpwdw=="}, {"X-API-Key", "tok-b"}}, ""},
		{"empty bearer beside x-api-key", []header{{"Authorization", "Bearer "}, {"X-API-Key", "tok-b"}}, ""},
		{"nothing", nil, ""},
	}
	for _, c := range cases {
		got, err := credential.BearerFromMap(asMap(c.headers))
		switch {
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		case c.want == "" && (got != "" || !errors.Is(err, credential.ErrBearerOnly) || !strings.Contains(err.Error(), "Authorization: Bearer <key>")):
			t.Errorf("%s: got %q, %v; want ErrBearerOnly", c.name, got, err)
		}
	}
}
