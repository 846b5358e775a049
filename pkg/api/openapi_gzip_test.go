package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
)

// TestOpenAPIGzipCurrent fails when openapi.json was edited without
// regenerating the gzipped copy the binary embeds.
func TestOpenAPIGzipCurrent(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(openAPIDoc(), src) {
		t.Fatal("openapi.json.gz is stale: run go generate ./pkg/api")
	}
}

// TestOpenAPIServedEncodings: the document is byte-identical to
// openapi.json whether the client accepts gzip or not.
func TestOpenAPIServedEncodings(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	s := New(newFake())
	for _, tc := range []struct {
		accept string
		gzip   bool
	}{
		{"", false},
		{"identity", false},
		{"gzip", true},
		{"br;q=1.0, gzip;q=0.8, *;q=0.1", true},
		{"GZIP", true},
		{"x-gzip", true},
		{"*", true},
		{"gzip;q=0", false},
		{"gzip;q=0.000, *", false},
		{"*;q=0", false},
		{"br, deflate", false},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil)
			if tc.accept != "" {
				req.Header.Set("Accept-Encoding", tc.accept)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			res := rec.Result()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, rec.Body)
			}
			body := rec.Body.Bytes()
			if got := res.Header.Get("Content-Length"); got != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length %s, body %d bytes", got, len(body))
			}
			if res.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("Vary %q", res.Header.Get("Vary"))
			}
			ce := res.Header.Get("Content-Encoding")
			if tc.gzip {
				if ce != "gzip" {
					t.Fatalf("Content-Encoding %q, want gzip", ce)
				}
				plain, err := gunzip(body)
				if err != nil {
					t.Fatalf("gunzip: %v", err)
				}
				body = plain
			} else if ce != "" {
				t.Fatalf("Content-Encoding %q, want none", ce)
			}
			if !bytes.Equal(body, src) {
				t.Fatalf("body (%d bytes) differs from openapi.json (%d bytes)", len(body), len(src))
			}
		})
	}
}
