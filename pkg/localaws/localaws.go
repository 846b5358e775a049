// Package localaws runs in-process stand-ins for the AWS services sessionbox
// uses, for local mode (`sessionbox serve`) and tests: a DynamoDB-compatible
// HTTP API (minidyn) and an S3-compatible one (gofakes3) storing objects on
// disk. The production adapters (pkg/store, pkg/blob) talk to them through
// the real AWS SDK clients built by DynamoDBClient and S3Client, so local
// mode runs the production code path.
package localaws

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessionbox/sessionbox/pkg/httplimits"
)

// Region is the region the local clients sign for.
const Region = "us-east-1"

// shutdownGrace bounds how long stop waits for requests in flight. Calls to
// the stand-ins are short; a longer grace would mostly wait on connections
// an SDK client dialed and never used, which net/http counts as busy for
// their first five seconds.
const shutdownGrace = time.Second

// serve listens on a loopback port, the one in portFile if it names one
// still free (else any, then saved there), and serves h until stop is
// called or ctx ends. stop waits for the server goroutine, so none outlives
// it. after, when not nil, runs once when the server has shut down and no
// request is in flight any more.
func serve(ctx context.Context, name, portFile string, h http.Handler, after func()) (endpoint string, stop func(), err error) {
	ln, err := listen(ctx, portFile)
	if err != nil {
		return "", nil, fmt.Errorf("localaws: %s: listen: %w", name, err)
	}
	// Presigned uploads come from anyone with a URL: stalled ones are
	// dropped and connections capped.
	var limits httplimits.Limits
	srv := limits.Server(h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve only returns on shutdown or a broken listener; in the
		// latter case callers see their requests fail, which says more
		// than a log line would.
		_ = srv.Serve(limits.Listener(ln))
	}()
	var once sync.Once
	finish := func() {
		shutdown(srv)
		if after != nil {
			once.Do(after)
		}
	}
	ctxDone := context.AfterFunc(ctx, finish)
	stop = func() {
		ctxDone()
		finish() // if the context's shutdown is under way, once waits for it
		<-done
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// listen listens on 127.0.0.1, on the port saved in portFile when it is
// free: URLs presigned for a stand-in name its port, so they keep working
// across a restart that gets it back.
func listen(ctx context.Context, portFile string) (net.Listener, error) {
	var lc net.ListenConfig
	if portFile == "" {
		return lc.Listen(ctx, "tcp", "127.0.0.1:0")
	}
	if b, err := os.ReadFile(portFile); err == nil {
		if port, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 16); err == nil && port > 0 {
			if ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.FormatUint(port, 10))); err == nil {
				return ln, nil
			}
		}
	}
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if err := os.WriteFile(portFile, []byte(port+"\n"), 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("save port: %w", err)
	}
	return ln, nil
}

func shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
}
