package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// BufferedHandler is a Lambda handler for REST API proxy integrations that
// return the whole response at once.
type BufferedHandler func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// Buffered serves h for proxy events, collecting the whole response.
func Buffered(h http.Handler) BufferedHandler {
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		req, err := NewRequest(ctx, ev)
		if err != nil {
			return badRequest(err), nil
		}
		w := &bufferWriter{header: http.Header{}}
		h.ServeHTTP(w, req)
		return w.response(), nil
	}
}

type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferWriter) Header() http.Header { return w.header }

func (w *bufferWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *bufferWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush is a no-op: a buffered integration has nowhere to flush to, and
// handlers that stream still work, only later.
func (w *bufferWriter) Flush() {}

func (w *bufferWriter) response() events.APIGatewayProxyResponse {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	res := events.APIGatewayProxyResponse{StatusCode: w.status, MultiValueHeaders: map[string][]string(w.header)}
	body := w.body.Bytes()
	if isText(w.header.Get("Content-Type")) && !isEncoded(w.header) && utf8.Valid(body) {
		res.Body = string(body)
	} else {
		res.Body = base64.StdEncoding.EncodeToString(body)
		res.IsBase64Encoded = true
	}
	return res
}

// isEncoded reports whether the body carries a content coding (gzip):
// its bytes are not the text its type names, so API Gateway must get them
// base64-encoded to pass them on unchanged (binaryMediaTypes "*/*").
func isEncoded(h http.Header) bool {
	ce := strings.TrimSpace(h.Get("Content-Encoding"))
	return ce != "" && !strings.EqualFold(ce, "identity")
}

// badRequest answers an event that cannot become an http.Request; the
// handler never sees it.
func badRequest(err error) events.APIGatewayProxyResponse {
	body, _ := json.Marshal(map[string]any{
		"type":   "https://sessionbox.dev/problems/invalid-input",
		"title":  "Bad Request",
		"status": http.StatusBadRequest,
		"detail": "the request could not be read: " + err.Error(),
	})
	return events.APIGatewayProxyResponse{
		StatusCode: http.StatusBadRequest,
		Headers:    map[string]string{"Content-Type": "application/problem+json"},
		Body:       string(body),
	}
}
