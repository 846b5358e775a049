//go:build linux

package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/kernel"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/sudo"
)

// KernelPort is the code interpreter's port; every other port is envd.
const KernelPort = "49999"

// Run serves the sandbox on ln until ctx ends. It signals readiness as soon as the
// socket listens; both servers are cheap to build (the interpreter starts
// Python on first use, or right after readiness when PrewarmKernel is set),
// so create-to-first-command never waits for Python.
// ready must also release the readiness descriptor so sandboxed processes
// never inherit it. standby, when not nil, is the kernel Standby started
// for this tree: the interpreter adopts it, or it is discarded.
func Run(ctx context.Context, cfg Config, standby *kernel.Standby, ln net.Listener, ready func() error) error {
	if standby != nil && !cfg.PrewarmKernel {
		// Before readiness, so no Python idles where none was asked for.
		standby.Discard()
		standby = nil
	}
	if err := applyRlimits(cfg.Rlimits); err != nil {
		return errors.Join(err, discard(standby))
	}
	envdSrv, err := newEnvd(cfg)
	if err != nil {
		return errors.Join(err, discard(standby))
	}
	kernelSrv, err := newKernel(cfg)
	if err != nil {
		return errors.Join(err, envdSrv.Close(), discard(standby))
	}
	// From here the kernel server owns the standby: Close stops it.
	if standby != nil {
		kernelSrv.PrewarmFrom(standby, cfg.Env)
	}
	srv := &http.Server{Handler: dispatch(envdSrv, kernelSrv), ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1+len(loopbackPorts))
	go func() { errc <- srv.Serve(ln) }()
	if cfg.ServeLoopback {
		// Bound before readiness, so before any sandboxed code could take
		// the ports.
		lns, err := listenLoopback()
		if err != nil {
			return errors.Join(err, srv.Close(), envdSrv.Close(), kernelSrv.Close())
		}
		handlers := map[string]http.Handler{EnvdPort: envdSrv, KernelPort: kernelSrv}
		for port, l := range lns {
			inner := &http.Server{Handler: handlers[port], ReadHeaderTimeout: 30 * time.Second}
			go func() { errc <- inner.Serve(l) }()
			defer inner.Close()
		}
	}
	if cfg.WithRoot {
		sl, err := sudo.Listen()
		if err != nil {
			err = fmt.Errorf("sudo socket: %w", err)
			return errors.Join(err, srv.Close(), envdSrv.Close(), kernelSrv.Close())
		}
		defer sl.Close()
		go func() { _ = sudo.Serve(sl) }()
	}
	if err := startTemplate(ctx, cfg, envdSrv); err != nil {
		return errors.Join(err, srv.Close(), envdSrv.Close(), kernelSrv.Close())
	}
	if err := ready(); err != nil {
		err = fmt.Errorf("report readiness: %w", err)
		return errors.Join(err, srv.Close(), envdSrv.Close(), kernelSrv.Close())
	}
	if cfg.PrewarmKernel && standby == nil {
		// After readiness, so Python's start does not delay the create.
		kernelSrv.Prewarm()
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return errors.Join(err, srv.Shutdown(shutCtx), envdSrv.Close(), kernelSrv.Close())
}

func discard(st *kernel.Standby) error {
	if st != nil {
		st.Discard()
	}
	return nil
}

// loopbackPorts are served inside the sandbox when Config.ServeLoopback.
var loopbackPorts = []string{EnvdPort, KernelPort}

func listenLoopback() (map[string]net.Listener, error) {
	lns := map[string]net.Listener{}
	for _, port := range loopbackPorts {
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			for _, o := range lns {
				o.Close()
			}
			return nil, fmt.Errorf("serve port %s inside the sandbox: %w", port, err)
		}
		lns[port] = l
	}
	return lns, nil
}

// dispatch routes on the port the client addressed, which the runtime's
// proxy passes through in E2b-Sandbox-Port: the interpreter, envd, or a
// server of the sandbox's own.
func dispatch(envdSrv, kernelSrv http.Handler) http.Handler {
	ports := portProxy()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.Header.Get("E2b-Sandbox-Port"); {
		case p == KernelPort:
			kernelSrv.ServeHTTP(w, r)
		case p == "" || p == EnvdPort || !validPort(p):
			envdSrv.ServeHTTP(w, r)
		default:
			ports.ServeHTTP(w, r)
		}
	})
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
