// Package lambdaemu is a small emulator of the Lambda Runtime API: it runs a
// function binary the way Lambda does (AWS_LAMBDA_RUNTIME_API), hands it
// invocations and collects its answers, buffered or streamed. Tests replay
// events through real function binaries with it, and benchmarks measure
// their init time.
package lambdaemu

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const apiPrefix = "/2018-06-01/runtime"

// Response is how the function answered one invocation.
type Response struct {
	// Body is the payload; for a streamed response, everything streamed.
	Body []byte
	// ContentType is the response's content type; streamed REST API
	// responses carry application/vnd.awslambda.http-integration-response.
	ContentType string
	// ErrorType and ErrorMessage are set when the function reported an
	// error (handler error, panic, or an error after streaming began).
	ErrorType    string
	ErrorMessage string
}

// Emulator serves the Runtime API on a loopback address.
type Emulator struct {
	srv      *http.Server
	addr     string
	pending  chan *invocation
	ready    chan struct{}
	readyAt  atomic.Int64
	once     sync.Once
	mu       sync.Mutex
	inflight map[string]*invocation
	initErr  chan Response
	seq      atomic.Int64
	timeout  time.Duration
}

type invocation struct {
	id      string
	payload []byte
	done    chan Response
}

// Start serves the Runtime API on 127.0.0.1 at a free port. Timeout bounds
// each invocation (the function's configured timeout); zero means 15 min.
func Start(timeout time.Duration) (*Emulator, error) {
	if timeout == 0 {
		timeout = 15 * time.Minute
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	e := &Emulator{
		addr:     ln.Addr().String(),
		pending:  make(chan *invocation),
		ready:    make(chan struct{}),
		inflight: map[string]*invocation{},
		initErr:  make(chan Response, 1),
		timeout:  timeout,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+apiPrefix+"/invocation/next", e.next)
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/response", e.response)
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/error", e.invocationError)
	mux.HandleFunc("POST "+apiPrefix+"/init/error", e.initError)
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// Addr is the value for AWS_LAMBDA_RUNTIME_API.
func (e *Emulator) Addr() string { return e.addr }

// Ready is closed when the function first asks for an invocation: its init
// phase is over.
func (e *Emulator) Ready() <-chan struct{} { return e.ready }

// ReadyAt is when the function first asked for an invocation.
func (e *Emulator) ReadyAt() time.Time {
	n := e.readyAt.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// InitError delivers the error a function reported from its init phase.
func (e *Emulator) InitError() <-chan Response { return e.initErr }

// Invoke hands payload to the function and waits for its answer.
func (e *Emulator) Invoke(ctx context.Context, payload []byte) (Response, error) {
	inv := &invocation{
		id:      "req-" + strconv.FormatInt(e.seq.Add(1), 10),
		payload: payload,
		done:    make(chan Response, 1),
	}
	select {
	case e.pending <- inv:
	case <-ctx.Done():
		return Response{}, fmt.Errorf("waiting for the function to take the invocation: %w", ctx.Err())
	}
	select {
	case r := <-inv.done:
		return r, nil
	case <-ctx.Done():
		return Response{}, fmt.Errorf("waiting for the function's answer: %w", ctx.Err())
	}
}

// Close stops the emulator.
func (e *Emulator) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return e.srv.Shutdown(ctx)
}

func (e *Emulator) next(w http.ResponseWriter, r *http.Request) {
	e.once.Do(func() {
		e.readyAt.Store(time.Now().UnixNano())
		close(e.ready)
	})
	var inv *invocation
	select {
	case inv = <-e.pending:
	case <-r.Context().Done():
		return
	}
	e.mu.Lock()
	e.inflight[inv.id] = inv
	e.mu.Unlock()
	deadline := time.Now().Add(e.timeout)
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:eu-west-1:123456789012:function:sessionbox-local")
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(inv.payload)
}

func (e *Emulator) take(id string) *invocation {
	e.mu.Lock()
	defer e.mu.Unlock()
	inv := e.inflight[id]
	delete(e.inflight, id)
	return inv
}

func (e *Emulator) response(w http.ResponseWriter, r *http.Request) {
	inv := e.take(r.PathValue("id"))
	if inv == nil {
		http.Error(w, `{"errorType":"InvalidRequestID"}`, http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	res := Response{Body: body, ContentType: r.Header.Get("Content-Type")}
	// The runtime client reports a failure after the body began in trailers.
	if t := r.Trailer.Get("Lambda-Runtime-Function-Error-Type"); t != "" {
		res.ErrorType = t
		msg, decErr := base64.StdEncoding.DecodeString(r.Trailer.Get("Lambda-Runtime-Function-Error-Body"))
		if decErr != nil {
			msg = []byte(r.Trailer.Get("Lambda-Runtime-Function-Error-Body"))
		}
		res.ErrorMessage = string(msg)
	} else if err != nil {
		res.ErrorType, res.ErrorMessage = "Runtime.TruncatedResponse", err.Error()
	}
	inv.done <- res
	w.WriteHeader(http.StatusAccepted)
}

func (e *Emulator) invocationError(w http.ResponseWriter, r *http.Request) {
	inv := e.take(r.PathValue("id"))
	if inv == nil {
		http.Error(w, `{"errorType":"InvalidRequestID"}`, http.StatusBadRequest)
		return
	}
	inv.done <- errorResponse(r)
	w.WriteHeader(http.StatusAccepted)
}

func (e *Emulator) initError(w http.ResponseWriter, r *http.Request) {
	select {
	case e.initErr <- errorResponse(r):
	default:
	}
	w.WriteHeader(http.StatusAccepted)
}

func errorResponse(r *http.Request) Response {
	body, _ := io.ReadAll(r.Body)
	typ := r.Header.Get("Lambda-Runtime-Function-Error-Type")
	if typ == "" {
		typ = "Unhandled"
	}
	return Response{Body: body, ContentType: r.Header.Get("Content-Type"), ErrorType: typ, ErrorMessage: string(body)}
}
