//go:build linux

// Package envd serves E2B's in-sandbox daemon protocol (envd): the REST file,
// health, env and metrics endpoints and the Connect process and filesystem
// services, as one http.Handler. Without accounts it runs as the sandbox user
// and never changes identity, so it can be tested on the host with a temp dir
// as home; with accounts it runs as root and acts as each request's user
// (accounts.go), resolving relative paths against that user's home and
// making missing parent directories as root for that user, as E2B's envd.
package envd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem/filesystemconnect"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process/processconnect"
)

// Version is the envd version whose SDK-gated features this server implements:
// recursive watch, metrics with disk, stdin flag, default user, CloseStdin,
// octet-stream upload, file metadata, watch include_entry and network-mount
// refusal (the highest gate the SDK checks is 0.6.4).
const Version = "0.6.4"

const (
	defaultUser           = "user"
	defaultHome           = "/home/user"
	defaultShell          = "/bin/bash"
	defaultMaxOutputBytes = 16 << 20
	defaultPath           = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// maxRPCMessageBytes bounds one decoded Connect request so a malformed or
	// hostile body cannot make the server allocate without limit.
	maxRPCMessageBytes = 32 << 20
)

// Config configures one envd server.
type Config struct {
	User           string            // default user name, "user"
	Home           string            // its home and default cwd, "/home/user"
	Env            map[string]string // sandbox-global env vars (create's envVars)
	AccessToken    string            // when set, required per E2B §2.1 auth rules
	Shell          string            // "/bin/bash"
	Workdir        string            // default cwd of processes (a template's); "" the user's home
	MaxOutputBytes int64             // bound on a process's output waiting for one reader (a stream or the next Connect); 0 = default
	// Accounts are the users requests may name, User among them; the server
	// then runs as root inside the sandbox and acts as each request's user
	// (accounts.go). Empty: the sandbox has only User, the server's own uid.
	Accounts map[string]Account
}

// Server is the envd protocol server. It is safe for concurrent use.
type Server struct {
	cfg      Config
	pathEnv  string
	handler  http.Handler
	errW     *connect.ErrorWriter
	procs    *processTable
	watchers *watcherTable
	cpu      *cpuSampler
	ids      *idNames
	// gzWriters pools *gzip.Writer for compressed downloads.
	gzWriters sync.Pool
	// copyBufs pools upload copy buffers (*[]byte).
	copyBufs sync.Pool

	ctx    context.Context
	cancel context.CancelFunc

	lifeMu    sync.Mutex // orders spawn against Close
	isClosed  bool
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New validates cfg, fills defaults and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.User == "" {
		cfg.User = defaultUser
	}
	if cfg.Home == "" {
		cfg.Home = defaultHome
	}
	if cfg.Shell == "" {
		cfg.Shell = defaultShell
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = defaultMaxOutputBytes
	}
	if !filepath.IsAbs(cfg.Home) {
		return nil, fmt.Errorf("envd: home %q must be absolute", cfg.Home)
	}
	if strings.ContainsAny(cfg.User, ":\x00/") {
		return nil, fmt.Errorf("envd: invalid user name %q", cfg.User)
	}
	env := make(map[string]string, len(cfg.Env))
	for k, v := range cfg.Env {
		env[k] = v
	}
	cfg.Env = env
	pathEnv := os.Getenv("PATH")
	if pathEnv == "" {
		pathEnv = defaultPath
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:      cfg,
		pathEnv:  pathEnv,
		errW:     connect.NewErrorWriter(),
		procs:    newProcessTable(),
		watchers: newWatcherTable(),
		cpu:      newCPUSampler(),
		ids:      newIDNames(),
		ctx:      ctx,
		cancel:   cancel,
	}
	s.handler = withCORS(s.asAccount(s.routes()))
	return s, nil
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	opts := []connect.HandlerOption{connect.WithReadMaxBytes(maxRPCMessageBytes)}
	procPath, procHandler := processconnect.NewProcessHandler(&processService{s: s}, opts...)
	fsPath, fsHandler := filesystemconnect.NewFilesystemHandler(&filesystemService{s: s}, opts...)
	mux.Handle(procPath, s.rpcAuth(procHandler))
	mux.Handle(fsPath, s.rpcAuth(fsHandler))
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.Handle("GET /envs", s.tokenAuth(http.HandlerFunc(s.handleEnvs)))
	mux.Handle("GET /metrics", s.tokenAuth(http.HandlerFunc(s.handleMetrics)))
	mux.HandleFunc("GET /files", s.handleDownload)
	mux.HandleFunc("POST /files", s.handleUpload)
	mux.HandleFunc("/", s.handleNotFound)
	return mux
}

// ServeHTTP dispatches one request; a panic in a handler becomes a 500 so a
// bad request can never take the sandbox agent down.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if rec := recover(); rec != nil {
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			writeJSONError(w, http.StatusInternalServerError, fmt.Errorf("internal error: %v", rec))
		}
	}()
	s.handler.ServeHTTP(w, r)
}

// Close kills every process the server started, stops every watcher and
// waits for their goroutines.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.lifeMu.Lock()
		s.isClosed = true
		s.lifeMu.Unlock()
		s.cancel()
		s.procs.killAll()
		s.watchers.closeAll()
	})
	s.wg.Wait()
	return nil
}

func (s *Server) closed() bool { return s.ctx.Err() != nil }

// spawn runs f on a goroutine Close waits for; after Close it refuses.
func (s *Server) spawn(f func()) bool {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.isClosed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	writeJSONError(w, http.StatusNotFound, errors.New("no route for "+r.Method+" "+r.URL.Path))
}
