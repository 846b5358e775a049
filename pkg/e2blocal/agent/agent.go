package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// KernelPort is the code interpreter's port; every other port is envd.
const KernelPort = "49999"

// backend is one in-sandbox server.
type backend interface {
	http.Handler
	Close() error
}

// Run serves the sandbox until ctx ends. It signals readiness by writing one
// byte to ready as soon as the socket listens: envd is cheap to build, while
// the Python kernel starts lazily (or in the background when prewarmed) so
// create-to-first-command does not wait for an interpreter. ready must also
// release the readiness descriptor so sandboxed processes never inherit it.
func Run(ctx context.Context, cfg Config, ready func() error) error {
	if err := applyRlimits(cfg.Rlimits); err != nil {
		return err
	}
	_ = os.Remove(cfg.Socket)
	ln, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Socket, err)
	}
	envdSrv, err := newEnvd(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	k := &lazyKernel{cfg: cfg}
	srv := &http.Server{Handler: dispatch(envdSrv, k), ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if err := ready(); err != nil {
		return errors.Join(fmt.Errorf("report readiness: %w", err), srv.Close())
	}
	if cfg.PrewarmKernel {
		go k.get()
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return errors.Join(err, srv.Shutdown(shutCtx), envdSrv.Close(), k.Close())
}

func dispatch(envdSrv http.Handler, k *lazyKernel) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("E2b-Sandbox-Port") != KernelPort {
			envdSrv.ServeHTTP(w, r)
			return
		}
		h, err := k.get()
		if err != nil {
			http.Error(w, "code interpreter unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// lazyKernel builds the interpreter server on first use, once.
type lazyKernel struct {
	cfg  Config
	once sync.Once
	mu   sync.Mutex
	srv  backend
	err  error
}

func (k *lazyKernel) get() (http.Handler, error) {
	k.once.Do(func() {
		srv, err := newKernel(k.cfg)
		k.mu.Lock()
		k.srv, k.err = srv, err
		k.mu.Unlock()
	})
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.srv, k.err
}

func (k *lazyKernel) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.srv == nil {
		return nil
	}
	return k.srv.Close()
}

// applyRlimits lowers the agent's own limits; everything it starts inherits
// them, so they hold before any sandboxed code runs.
func applyRlimits(limits []Rlimit) error {
	for _, l := range limits {
		lim := unix.Rlimit{Cur: l.Cur, Max: l.Max}
		if err := unix.Setrlimit(l.Resource, &lim); err != nil {
			return fmt.Errorf("setrlimit %d: %w", l.Resource, err)
		}
	}
	return nil
}
