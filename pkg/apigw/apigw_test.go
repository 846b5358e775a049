package apigw_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/apigw"
)

func event(method, path string) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{
		HTTPMethod: method,
		Path:       path,
		RequestContext: events.APIGatewayProxyRequestContext{
			RequestID:  "req-1",
			DomainName: "abc.execute-api.eu-west-1.amazonaws.com",
			Authorizer: map[string]any{"tenant": "acme", "principal": "alice"},
		},
	}
}

func TestNewRequest(t *testing.T) {
	t.Parallel()
	ev := event(http.MethodPut, "/v1/sessions/s1/files/content")
	ev.MultiValueQueryStringParameters = map[string][]string{"path": {"a b.txt"}, "tag": {"x", "y"}}
	ev.QueryStringParameters = map[string]string{"path": "a b.txt", "tag": "y", "only": "single"}
	ev.MultiValueHeaders = map[string][]string{"X-Multi": {"1", "2"}, "Content-Type": {"application/octet-stream"}}
	ev.Headers = map[string]string{"x-single": "s"}
	ev.Body = base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255})
	ev.IsBase64Encoded = true
	ev.RequestContext.Path = "/prod/v1/sessions/s1/files/content"

	req, err := apigw.NewRequest(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"method", req.Method, http.MethodPut},
		{"path", req.URL.Path, "/v1/sessions/s1/files/content"},
		{"query path", req.URL.Query().Get("path"), "a b.txt"},
		{"query single", req.URL.Query().Get("only"), "single"},
		{"header single", req.Header.Get("X-Single"), "s"},
		{"request id", req.Header.Get("X-Request-Id"), "req-1"},
		{"host", req.Host, "abc.execute-api.eu-west-1.amazonaws.com"},
		{"tenant", apigw.Authorizer(req.Context())["tenant"].(string), "acme"},
		{"client path", apigw.ClientPath(req.Context()), "/prod/v1/sessions/s1/files/content"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if got := req.URL.Query()["tag"]; len(got) != 2 {
		t.Errorf("multi-value query tag = %v, want both values", got)
	}
	if got := req.Header.Values("X-Multi"); len(got) != 2 {
		t.Errorf("multi-value header = %v", got)
	}
	body, _ := io.ReadAll(req.Body)
	if !bytes.Equal(body, []byte{0, 1, 2, 255}) || req.ContentLength != 4 {
		t.Errorf("body = %v (length %d)", body, req.ContentLength)
	}
}

func TestNewRequestRejectsBadBase64(t *testing.T) {
	t.Parallel()
	ev := event(http.MethodPost, "/x")
	ev.Body, ev.IsBase64Encoded = "%%%", true
	if _, err := apigw.NewRequest(context.Background(), ev); err == nil {
		t.Fatal("want an error for a body that is not base64")
	}
	res, err := apigw.Buffered(http.NotFoundHandler())(context.Background(), ev)
	if err != nil || res.StatusCode != http.StatusBadRequest || res.Headers["Content-Type"] != "application/problem+json" {
		t.Fatalf("got %d %v %v", res.StatusCode, res.Headers, err)
	}
}

func TestBuffered(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		contentType string
		encoding    string
		body        []byte
		wantBase64  bool
	}{
		{"json", "application/json", "", []byte(`{"ok":true}`), false},
		{"problem", "application/problem+json", "", []byte(`{"status":404}`), false},
		{"text", "text/plain; charset=utf-8", "", []byte("hello"), false},
		{"binary", "application/octet-stream", "", []byte{0xff, 0x00, 0x10}, true},
		{"png", "image/png", "", []byte("\x89PNG"), true},
		{"invalid utf-8 claimed as text", "text/plain", "", []byte{0xff, 0xfe}, true},
		// An encoded body is bytes whatever its type says, even when they
		// happen to be valid UTF-8.
		{"gzipped json", "application/json", "gzip", []byte("valid utf-8"), true},
		{"identity json", "application/json", "identity", []byte(`{"ok":true}`), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				if c.encoding != "" {
					w.Header().Set("Content-Encoding", c.encoding)
				}
				w.Header().Add("X-Twice", "1")
				w.Header().Add("X-Twice", "2")
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write(c.body)
			})
			res, err := apigw.Buffered(h)(context.Background(), event(http.MethodGet, "/"))
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusCreated {
				t.Errorf("status = %d", res.StatusCode)
			}
			if res.IsBase64Encoded != c.wantBase64 {
				t.Errorf("base64 = %v, want %v", res.IsBase64Encoded, c.wantBase64)
			}
			got := []byte(res.Body)
			if res.IsBase64Encoded {
				got, _ = base64.StdEncoding.DecodeString(res.Body)
			}
			if !bytes.Equal(got, c.body) {
				t.Errorf("body = %q, want %q", got, c.body)
			}
			if len(res.MultiValueHeaders["X-Twice"]) != 2 {
				t.Errorf("headers = %v", res.MultiValueHeaders)
			}
		})
	}
}

func TestBufferedDefaultsToOK(t *testing.T) {
	t.Parallel()
	res, err := apigw.Buffered(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))(context.Background(), event(http.MethodGet, "/"))
	if err != nil || res.StatusCode != http.StatusOK || res.Body != "" {
		t.Fatalf("got %+v, %v", res, err)
	}
}

// readStream splits what the Lambda runtime would send for a streamed
// response: the JSON prelude, eight NUL bytes, then the body.
func readStream(t *testing.T, res *events.APIGatewayProxyStreamingResponse) (prelude map[string]any, body string) {
	t.Helper()
	raw, err := io.ReadAll(res)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(raw, make([]byte, 8))
	if i < 0 {
		t.Fatalf("no prelude separator in %q", raw)
	}
	if err := json.Unmarshal(raw[:i], &prelude); err != nil {
		t.Fatalf("prelude %q: %v", raw[:i], err)
	}
	return prelude, string(raw[i+8:])
}

func TestStreamingReturnsBeforeTheHandlerEnds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	done := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write([]byte("{\"n\":1}\n"))
		w.(http.Flusher).Flush()
		<-release
		_, _ = w.Write([]byte("{\"n\":2}\n"))
	})
	res, err := apigw.Streaming(h)(context.Background(), event(http.MethodPost, "/v1/sessions/s/execute"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("handler finished before the response was returned")
	default:
	}
	if res.StatusCode != http.StatusOK || res.MultiValueHeaders["Content-Type"][0] != "application/x-ndjson" {
		t.Fatalf("status %d headers %v", res.StatusCode, res.MultiValueHeaders)
	}
	if res.ContentType() != "application/vnd.awslambda.http-integration-response" {
		t.Fatalf("content type %q", res.ContentType())
	}
	close(release)
	prelude, body := readStream(t, res)
	if prelude["statusCode"].(float64) != 200 {
		t.Errorf("prelude = %v", prelude)
	}
	if body != "{\"n\":1}\n{\"n\":2}\n" {
		t.Errorf("body = %q", body)
	}
}

func TestStreamingStatusAndEmptyBody(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
	})
	res, err := apigw.Streaming(h)(context.Background(), event(http.MethodPost, "/"))
	if err != nil {
		t.Fatal(err)
	}
	prelude, body := readStream(t, res)
	if prelude["statusCode"].(float64) != 404 || body != "" {
		t.Fatalf("prelude %v body %q", prelude, body)
	}
}

func TestStreamingHandlerPanicCutsTheStream(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("partial"))
		panic("boom")
	})
	res, err := apigw.Streaming(h)(context.Background(), event(http.MethodPost, "/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(res); err == nil {
		t.Fatal("want the stream to end with an error after a panic")
	}
}

func TestStreamingPanicBeforeHeadersIs500(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	res, err := apigw.Streaming(h)(context.Background(), event(http.MethodPost, "/"))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status = %d", res.StatusCode)
	}
}

func TestStreamingGivesUpWhenTheInvocationEnds(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := apigw.Streaming(h)(ctx, event(http.MethodPost, "/")); err == nil {
		t.Fatal("want an error when the context ends before headers")
	}
}
