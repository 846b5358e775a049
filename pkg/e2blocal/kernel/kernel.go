//go:build linux

// Package kernel is the code-interpreter server of the local E2B runtime (E2B
// port 49999): /execute streams NDJSON from a lean
// stdlib-only Python kernel (kernel.py, embedded), one process per context.
//
// A context's kernel starts on first use, or ahead of it with Prewarm, so
// sandboxes that never run code pay nothing for it. The server talks to a
// kernel over three pipes with a small framed protocol described at the top
// of kernel.py. The files a cell changes in its context's working directory
// (a files_changed line, a sessionbox extension) come from the server's
// inotify watch of that directory, or, without one, from the kernel's scans
// of it before and after the cell. Beyond the E2B request fields, /execute accepts "timeout"
// (seconds): the cell is interrupted when it elapses, as it is when the
// client disconnects; a cell that ignores the interrupt has its kernel
// killed after a grace period (variables are lost).
//
// Cells behave as in E2B's code-interpreter template: their common
// indentation is removed before compiling (as IPython does); a displayed
// matplotlib figure carries, beside its PNG, E2B's structured "chart" data
// (kernel.py; SESSIONBOX_CHARTS=0 in the kernel's environment turns it off);
// a DataFrame result carries its columns as "data"; PIL images shown or
// saved to a path are displayed as PNG results (no viewer program runs).
// Unlike E2B, matplotlib's own saves through PIL (savefig) display nothing.
// The kernel's display() serves IPython's too, whether the host's Python has
// no IPython (a small IPython.display stands in), has one, or imports it at
// start (a sitecustomize): what a cell outputs does not depend on it.
//
// Languages: python, and bash (a persistent shell per context, driven by the
// same kernel program: cells are sourced, so variables, functions and cwd
// persist; output streams; a non-zero status is an error whose value is the
// status, as Jupyter's bash_kernel reports it; an interrupt ends the cell and
// keeps the shell); javascript and typescript (Node, Config.Node, running
// kernel.js, embedded: cells run in the process's global scope so top-level
// declarations persist, top-level await keeps them too, the last expression
// is the result as Node's REPL shows it, console output streams, static
// imports work, an interrupt stops a busy loop and keeps the state;
// TypeScript is stripped of its types by npm's typescript package, which
// scripts/setup.sh installs under /usr so sandboxes see it). An execution
// naming only a language runs in that language's default context; python's
// and (when node is there) javascript's are listed from the start, as in E2B.
package kernel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// DefaultMaxOutputBytes caps stdout and stderr of one execution, each.
const DefaultMaxOutputBytes = 1 << 20

// DefaultMaxContexts caps the contexts of one interpreter: each is a
// Python process, so creates without end would exhaust the sandbox's
// memory and processes (E2B states no cap; its VMs bound them the same way).
const DefaultMaxContexts = 32

// Config configures a Server.
type Config struct {
	Python         string   // interpreter, default "/usr/bin/python3"
	Node           string   // runs javascript and typescript contexts, default "/usr/bin/node"
	Workdir        string   // default context cwd, "/home/user"
	Env            []string // base environment of kernel processes, "K=V"; nil = this process's
	MaxOutputBytes int64    // per-execution cap on stdout/stderr, each; 0 = DefaultMaxOutputBytes
	MaxContexts    int      // contexts at once, default ones included; 0 = DefaultMaxContexts
	// ExecTimeout bounds an execution whose request sets no "timeout"; 0 = no bound.
	ExecTimeout time.Duration
	// AccessToken is the sandbox's envd access token; when set, /execute
	// requires it in X-Access-Token and /contexts* reject a wrong one.
	AccessToken string
	// Compiled is the path of Source compiled by Python into a .pyc it
	// can run; empty sends the source on stdin, which Python compiles at
	// every kernel start (~12 ms of a ~50 ms start).
	Compiled string
	// Credential is who kernels run as; nil keeps this process's identity.
	// The sandbox agent runs as root inside the sandbox and starts kernels
	// as its user, except for a context whose cwd that user cannot enter
	// (E2B's /root): its kernel keeps the agent's identity, as E2B's
	// kernels all run as root.
	Credential *syscall.Credential
	// TypeScript is the typescript npm package (its directory) typescript
	// contexts strip types with; empty looks in npm's and Debian's global
	// module directories, where scripts/setup.sh installs it.
	TypeScript string
}

// tuning holds intervals that tests shorten.
type tuning struct {
	keepalive    time.Duration // NDJSON keepalive period while an execution waits or runs
	grace        time.Duration // after an interrupt, how long a cell may take to stop before its kernel is killed
	startTimeout time.Duration // how long a new kernel may take to report ready
	maxFrame     uint32        // largest kernel frame relayed; 0 = defaultMaxFrame
	scanOnly     bool          // kernels scan for changed files; the server watches none
}

var defaultTuning = tuning{keepalive: 5 * time.Second, grace: 5 * time.Second, startTimeout: 30 * time.Second}

// Server serves the code-interpreter API.
type Server struct {
	cfg  Config
	tune tuning
	mux  *http.ServeMux

	mu       sync.Mutex
	contexts map[string]*kctx
	order    []string
	defaults map[string]string // language -> its default context's id
	// lostDefaults names the languages whose default context was deleted
	// while it held state: the next default context of that language
	// reports a replaced kernel on its first execution.
	lostDefaults map[string]bool
	closed       bool

	bg sync.WaitGroup // prewarm starts, which Close waits for
}

var errClosed = errors.New("kernel server closed")

// New returns a Server with a default python context; its kernel starts on first use.
func New(cfg Config) (*Server, error) {
	return newServer(cfg, defaultTuning)
}

func newServer(cfg Config, tune tuning) (*Server, error) {
	if cfg.MaxOutputBytes < 0 {
		return nil, fmt.Errorf("kernel: negative MaxOutputBytes %d", cfg.MaxOutputBytes)
	}
	cfg = withDefaults(cfg)
	s := &Server{cfg: cfg, tune: tune, contexts: map[string]*kctx{}, defaults: map[string]string{}, lostDefaults: map[string]bool{}}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /health", s.handleHealth)
	s.mux.HandleFunc("POST /execute", s.requireToken(s.handleExecute))
	s.mux.HandleFunc("POST /contexts", s.checkTokenIfSent(s.handleCreateContext))
	s.mux.HandleFunc("GET /contexts", s.checkTokenIfSent(s.handleListContexts))
	s.mux.HandleFunc("DELETE /contexts/{id}", s.checkTokenIfSent(s.handleDeleteContext))
	s.mux.HandleFunc("POST /contexts/{id}/restart", s.checkTokenIfSent(s.handleRestartContext))
	s.defaultContext(langPython)
	// E2B's code interpreter lists a javascript context beside python's
	// from the start; its kernel too starts on first use.
	if _, err := os.Stat(cfg.Node); err == nil {
		s.defaultContext(langJavaScript)
	}
	return s, nil
}

// Prewarm starts the default context's kernel in the background when it has
// none, as E2B's code-interpreter template has Jupyter running once the
// sandbox is up, so the first execution does not wait for Python to start.
// An execution that arrives meanwhile waits for this start rather than
// beginning another; a start that fails is retried by the next execution,
// which reports the error.
func (s *Server) Prewarm() {
	c, err := s.defaultContext(langPython)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // Close may be waiting on bg already
	}
	s.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.tune.startTimeout)
		defer cancel()
		if err := c.acquire(ctx); err != nil {
			return
		}
		defer c.release()
		_, _ = c.ensure(ctx)
	})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// Close stops every kernel; requests still running end with an error line.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	all := make([]*kctx, 0, len(s.contexts))
	for _, c := range s.contexts {
		all = append(all, c)
	}
	s.contexts = map[string]*kctx{}
	s.order = nil
	clear(s.defaults)
	s.mu.Unlock()
	for _, c := range all {
		c.destroy()
	}
	// A start under way sees its context deleted and kills what it began.
	s.bg.Wait()
	return nil
}

// withDefaults fills in the defaults named on Config's fields.
func withDefaults(cfg Config) Config {
	if cfg.Python == "" {
		cfg.Python = "/usr/bin/python3"
	}
	if cfg.Node == "" {
		cfg.Node = "/usr/bin/node"
	}
	if cfg.Workdir == "" {
		cfg.Workdir = "/home/user"
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	if cfg.MaxOutputBytes == 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return cfg
}

// defaultSpec is how a server with cfg starts its default python context's kernel.
func defaultSpec(cfg Config, maxFrame uint32) procSpec {
	return procSpec{python: cfg.Python, compiled: cfg.Compiled, lang: langPython, dir: cfg.Workdir, env: cfg.Env,
		cap: cfg.MaxOutputBytes, maxFrame: maxFrame, cred: cfg.Credential}
}

func (s *Server) procSpec(lang, cwd string, asServer bool) procSpec {
	cred := s.cfg.Credential
	if asServer {
		cred = nil
	}
	spec := procSpec{python: s.cfg.Python, compiled: s.cfg.Compiled, lang: lang, dir: cwd, env: s.cfg.Env, cap: s.cfg.MaxOutputBytes, maxFrame: s.maxFrame(), cred: cred, scanOnly: s.tune.scanOnly}
	if nodeLanguage(lang) {
		spec.python, spec.compiled, spec.typescript = s.cfg.Node, "", s.cfg.TypeScript
	}
	return spec
}

func (s *Server) maxFrame() uint32 {
	if s.tune.maxFrame == 0 {
		return defaultMaxFrame
	}
	return s.tune.maxFrame
}

// resultBudget bounds the result lines of one execution: the larger of two
// frames' worth and 16 times the stream cap.
func (s *Server) resultBudget() int64 {
	return max(2*int64(s.maxFrame()), 16*s.cfg.MaxOutputBytes)
}

// defaultContext returns the default context of lang (the one an execution
// naming only a language runs in), creating it when it is missing.
func (s *Server) defaultContext(lang string) (*kctx, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	if c := s.contexts[s.defaults[lang]]; c != nil {
		return c, nil
	}
	c := newContext(s, lang, s.cfg.Workdir)
	c.lost = s.lostDefaults[lang]
	delete(s.lostDefaults, lang)
	s.addLocked(c)
	s.defaults[lang] = c.id
	return c, nil
}

func (s *Server) addLocked(c *kctx) {
	s.contexts[c.id] = c
	s.order = append(s.order, c.id)
}

func (s *Server) lookup(id string) *kctx {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.contexts[id]
}

func (s *Server) remove(id string) *kctx {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.contexts[id]
	if c == nil {
		return nil
	}
	delete(s.contexts, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
	if s.defaults[c.language] == id {
		delete(s.defaults, c.language)
		if c.hadState() {
			s.lostDefaults[c.language] = true
		}
	}
	return c
}

func (s *Server) list() []*kctx {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*kctx, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.contexts[id])
	}
	return out
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`"OK"`))
}
