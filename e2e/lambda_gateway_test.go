package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/lambdaemu"
)

// allowAlice is a REQUEST authorizer that lets every call through as
// alice of the test tenant, for tests about what lies behind it.
type allowAlice struct{}

func (allowAlice) Invoke(context.Context, []byte) (lambdaemu.Response, error) {
	b, err := json.Marshal(events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: "alice",
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{Version: "2012-10-17", Statement: []events.IAMPolicyStatement{
			{Action: []string{"execute-api:Invoke"}, Effect: "Allow", Resource: []string{"*"}},
		}},
		Context: map[string]any{"tenant": tenant, "principal": "alice", "authMethod": "apiKey"},
	})
	return lambdaemu.Response{Body: b}, err
}

// pngBytes is a small PNG: its signature holds bytes that are not UTF-8
// and a CR LF that a text path would mangle.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")

// TestBinaryThroughEmulatedGateway writes and reads binary files through
// the real start and files bootstraps behind the emulated API Gateway,
// configured as the stack configures it (lambdaemu.NewStackGateway), with
// the request shapes of the TypeScript SDK, the playground and curl: every
// read returns the exact bytes, whatever the Accept, and JSON answers stay
// JSON.
func TestBinaryThroughEmulatedGateway(t *testing.T) {
	startBin, filesBin := buildBinary(t, "../functions/start"), buildBinary(t, "../functions/files")
	newLambdaStack(t)
	gw := lambdaemu.NewStackGateway(map[string]lambdaemu.Invoker{
		"start": runFunction(t, startBin), "files": runFunction(t, filesBin),
	}, allowAlice{})
	srv := httptest.NewServer(gw)
	defer srv.Close()
	base := srv.URL + "/prod/v1/sessions/pics"

	call := func(t *testing.T, method, url string, body []byte, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		// The stack's authorizer cache requires its identity source.
		req.Header.Set("Authorization", "Bearer any")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		got, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, got
	}
	res, body := call(t, "POST", base+"/sandbox/start", []byte(`{"type":"code_interpreter"}`), "Content-Type", "application/json", "Accept", "*/*")
	if res.StatusCode != http.StatusOK || !json.Valid(body) {
		t.Fatalf("start through the gateway: %d %s", res.StatusCode, body)
	}

	random := make([]byte, 64<<10)
	_, _ = rand.Read(random)
	for _, c := range []struct {
		name, contentType, accept string
		data                      []byte
	}{
		{"SDK: bytes with no type, fetch's Accept", "", "*/*", pngBytes},
		{"playground: octet-stream, Accept */*", "application/octet-stream", "*/*", random},
		{"curl --data-binary with the README's Content-Type, curl's Accept", "application/octet-stream", "*/*", random},
		{"no Accept", "application/octet-stream", "", pngBytes},
		{"Accept octet-stream", "application/octet-stream", "application/octet-stream", random},
		{"Accept image/png", "application/octet-stream", "image/png", pngBytes},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := base + "/files/content?path=" + url.QueryEscape("b/"+strings.ReplaceAll(c.name, " ", "_"))
			var hdr []string
			if c.contentType != "" {
				hdr = append(hdr, "Content-Type", c.contentType)
			}
			res, body := call(t, "PUT", file, c.data, append(hdr, "Accept", "application/json")...)
			var entry map[string]any
			if res.StatusCode != http.StatusOK || json.Unmarshal(body, &entry) != nil || entry["size"] != float64(len(c.data)) {
				t.Fatalf("write: %d %s", res.StatusCode, body)
			}
			hdr = nil
			if c.accept != "" {
				hdr = []string{"Accept", c.accept}
			}
			res, body = call(t, "GET", file, nil, hdr...)
			if res.StatusCode != http.StatusOK || !bytes.Equal(body, c.data) {
				t.Fatalf("read: %d, %d bytes (%q...), want the %d bytes written", res.StatusCode, len(body), body[:min(len(body), 16)], len(c.data))
			}
		})
	}
	// curl's --data-binary without the header sends a form type: refused
	// with a problem that says what to send, never stored as something else.
	t.Run("curl --data-binary without a Content-Type", func(t *testing.T) {
		res, body := call(t, "PUT", base+"/files/content?path=b/form", random, "Content-Type", "application/x-www-form-urlencoded", "Accept", "*/*")
		if res.StatusCode != http.StatusUnsupportedMediaType || !bytes.Contains(body, []byte("application/octet-stream")) {
			t.Fatalf("form-typed write: %d %s", res.StatusCode, body)
		}
	})
}
