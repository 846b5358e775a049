package apigw

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// StreamingHandler is a Lambda handler for REST API proxy integrations with
// response transfer mode STREAM: the body reaches the client as the handler
// writes it.
type StreamingHandler func(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error)

// Streaming serves h for proxy events, streaming its response. It returns as
// soon as h has written its headers (or first bytes, or flushed); the Lambda
// runtime then copies the body while h keeps writing.
func Streaming(h http.Handler) StreamingHandler {
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
		req, err := NewRequest(ctx, ev)
		if err != nil {
			res := badRequest(err)
			return &events.APIGatewayProxyStreamingResponse{
				StatusCode: res.StatusCode, Headers: res.Headers, Body: strings.NewReader(res.Body),
			}, nil
		}
		pr, pw := io.Pipe()
		w := newStreamWriter(pw)
		go w.serve(h, req)
		select {
		case <-w.ready:
		case <-ctx.Done():
			_ = pr.CloseWithError(ctx.Err())
			return nil, fmt.Errorf("waiting for response headers: %w", ctx.Err())
		}
		return &events.APIGatewayProxyStreamingResponse{
			StatusCode:        w.status,
			MultiValueHeaders: w.sent,
			Body:              pr,
		}, nil
	}
}

// streamWriter is the http.ResponseWriter of a streamed response. Headers
// are frozen at the first WriteHeader, Write or Flush, like net/http's own.
type streamWriter struct {
	header http.Header
	pw     *io.PipeWriter

	once   sync.Once
	ready  chan struct{}
	status int
	sent   map[string][]string
}

func newStreamWriter(pw *io.PipeWriter) *streamWriter {
	return &streamWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
}

func (w *streamWriter) serve(h http.Handler, req *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			// Headers may be gone already; all that is left is to cut the
			// stream so the client sees it end abnormally.
			w.WriteHeader(http.StatusInternalServerError)
			_ = w.pw.CloseWithError(fmt.Errorf("handler panicked: %v", p))
			return
		}
		w.WriteHeader(http.StatusOK)
		_ = w.pw.Close()
	}()
	h.ServeHTTP(w, req)
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.status = status
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush sends the headers; bytes written go out as the runtime reads them.
func (w *streamWriter) Flush() { w.WriteHeader(http.StatusOK) }
