package local_test

import (
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func TestParseKeys(t *testing.T) {
	const a, b = "sbx_aaaaaaaaaaaaaaaaaaaa", "sbx_bbbbbbbbbbbbbbbbbbbb"
	cases := []struct {
		in      string
		want    []local.Key
		wantErr bool
	}{
		{in: a, want: []local.Key{{Principal: "key1", Secret: a}}},
		{in: " alice=" + a + " , bob=" + b + ",", want: []local.Key{{"alice", a}, {"bob", b}}},
		{in: a + "," + b, want: []local.Key{{"key1", a}, {"key2", b}}},
		{in: "", want: nil},
		{in: "short", wantErr: true},
		{in: "alice=notsbx_aaaaaaaaaaaaaaaaaaaa", wantErr: true},
		{in: "=" + a, wantErr: true},
		{in: a + "," + a, wantErr: true},
		// Held to the shape session.VerifyAPIKey accepts, or it would never work.
		{in: "sbx_aaaaaaaaaaaaaaaa.aaaa", wantErr: true},
		{in: "sbx_" + strings.Repeat("a", session.MaxAPIKeyLen), wantErr: true},
	}
	for _, c := range cases {
		got, err := local.ParseKeys(c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("ParseKeys(%q) error = %v, want error %v", c.in, err, c.wantErr)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("ParseKeys(%q) = %v, want %v", c.in, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("ParseKeys(%q)[%d] = %v, want %v", c.in, i, got[i], c.want[i])
			}
		}
	}
}
