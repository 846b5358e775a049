//go:build linux

package e2blocal

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxBodyBytes bounds control-plane request bodies.
const maxBodyBytes = 1 << 20

// maxTimeout is the longest sandbox lifetime E2B grants (24 h on Pro).
const maxTimeout = 24 * time.Hour

var apiKeyFormat = regexp.MustCompile(`^e2b_[0-9a-fA-F]+$`)

func (rt *Runtime) apiHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "OK")
	})
	rate := newCreateRate(rt.cfg.CreateRate)
	routes := map[string]http.HandlerFunc{
		"POST /sandboxes":                 rt.handleCreate(false, rate),
		"POST /v2/sandboxes":              rt.handleCreate(true, rate),
		"GET /sandboxes":                  rt.handleListV1,
		"GET /v2/sandboxes":               rt.handleListV2,
		"GET /sandboxes/metrics":          rt.handleMetricsMany,
		"GET /sandboxes/{id}":             rt.withSandbox(rt.handleGet),
		"DELETE /sandboxes/{id}":          rt.withSandbox(rt.handleKill),
		"POST /sandboxes/{id}/timeout":    rt.withSandbox(rt.handleTimeout),
		"POST /sandboxes/{id}/refreshes":  rt.withSandbox(rt.handleRefresh),
		"POST /sandboxes/{id}/pause":      rt.withSandbox(rt.handlePause),
		"POST /sandboxes/{id}/resume":     rt.withSandbox(rt.handleResume),
		"POST /sandboxes/{id}/connect":    rt.withSandbox(rt.handleConnect(false)),
		"POST /v2/sandboxes/{id}/connect": rt.withSandbox(rt.handleConnect(true)),
		"GET /sandboxes/{id}/metrics":     rt.withSandbox(rt.handleMetrics),
		"GET /templates/aliases/{alias}":  rt.handleTemplateAlias,
	}
	hidden, _ := hiddenRoutes(rt.cfg.OldAPI) // checked by init
	for pattern, h := range routes {
		if !hidden[pattern] {
			mux.Handle(pattern, rt.authenticated(h))
		}
	}
	// Parts of E2B's API the local runtime does not offer get a clear 501
	// rather than a 404 that the SDKs would report as "sandbox not found".
	for _, pattern := range []string{
		"POST /sandboxes/{id}/fork", "POST /sandboxes/{id}/snapshots", "GET /snapshots",
		"PUT /sandboxes/{id}/network", "GET /sandboxes/{id}/logs", "GET /v2/sandboxes/{id}/logs",
		"/templates/", "/v2/templates/", "/v3/templates",
	} {
		mux.Handle(pattern, rt.authenticated(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotImplemented, "%s %s is not supported by the local runtime", r.Method, r.URL.Path)
		})))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route for %s %s", r.Method, r.URL.Path)
	})
	return mux
}

// authenticated accepts any e2b_<hex> key, or exactly cfg.APIKey when set.
func (rt *Runtime) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-API-Key")
		switch {
		case key == "":
			writeError(w, http.StatusUnauthorized, "missing X-API-Key header")
		case rt.cfg.APIKey != "" && subtle.ConstantTimeCompare([]byte(key), []byte(rt.cfg.APIKey)) != 1:
			writeError(w, http.StatusUnauthorized, "invalid API key")
		case rt.cfg.APIKey == "" && !apiKeyFormat.MatchString(key):
			writeError(w, http.StatusUnauthorized, "invalid API key format: expected e2b_<hex>")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// withSandbox resolves {id}; unknown and malformed IDs are both 404, which
// is what the SDKs map to "not found".
func (rt *Runtime) withSandbox(h func(http.ResponseWriter, *http.Request, *sandbox)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		s := rt.lookup(id)
		if s == nil {
			sandboxNotFound(w, id)
			return
		}
		h(w, r, s)
	}
}

// decodeBody parses an optional JSON body into v; an empty body is allowed.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read request body: %v", err)
		return false
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return true
	}
	if err := json.Unmarshal(data, v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: %v", err)
		return false
	}
	return true
}

// seconds validates a timeout in seconds against the plan's maximum.
func (rt *Runtime) seconds(v *int64, def time.Duration) (time.Duration, error) {
	d, err := seconds(v, def)
	if err == nil && d > rt.maxLifetime() {
		return 0, errors.New(lifetimeError(rt.maxLifetime()))
	}
	return d, err
}

// seconds validates a timeout in seconds.
func seconds(v *int64, def time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if *v < 0 {
		return 0, fmt.Errorf("timeout must not be negative, got %d", *v)
	}
	// Compared in seconds: a huge value would overflow a Duration and come
	// out short or negative.
	if *v > int64(maxTimeout/time.Second) {
		return 0, fmt.Errorf("timeout must be at most %d seconds, got %d", int64(maxTimeout/time.Second), *v)
	}
	d := time.Duration(*v) * time.Second
	if d == 0 {
		return def, nil
	}
	return d, nil
}

func (rt *Runtime) handleCreate(v2 bool, rate *createRate) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req newSandboxRequest
		if !decodeBody(w, r, &req) {
			return
		}
		if rt.refuseLowSpace(w) {
			return
		}
		p, err := rt.createParams(req, v2)
		if err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
		if !rt.templateFound(w, p.templateID) {
			return
		}
		if rate.refuseRate(w) {
			return
		}
		s, err := rt.create(r.Context(), p)
		if msg, ok := homeSpaceMessage(err); ok {
			writeError(w, http.StatusInsufficientStorage, "%s", msg)
			return
		}
		if err != nil {
			var notReady notReadyError
			switch {
			case errors.As(err, &notReady):
				writeError(w, http.StatusInternalServerError, "%s", notReady.Error())
			case errors.Is(err, errClosed):
				writeError(w, http.StatusServiceUnavailable, "%v", err)
			case errors.Is(err, errTooMany):
				writeError(w, http.StatusTooManyRequests, "%s", tooManySandboxes(rt.cfg.MaxSandboxes))
			case overloaded(err):
				w.Header().Set("Retry-After", strconv.Itoa(overloadRetrySecs))
				writeError(w, http.StatusServiceUnavailable, "the host is too busy to start a sandbox now (its start timed out); try again in %d s", overloadRetrySecs)
			default:
				writeError(w, http.StatusInternalServerError, "create sandbox: %v", err)
			}
			return
		}
		writeJSON(w, http.StatusCreated, rt.sandboxBody(s))
	}
}

// overloadRetrySecs is the wait a create refused for overload asks for.
const overloadRetrySecs = 5

// overloaded reports whether a create failed because its sandbox's tree did
// not come up in time (bwrap reporting its namespace, the agent its
// readiness): on a host too loaded to schedule them, not a broken sandbox,
// so the client is asked to come back rather than told of a failure.
func overloaded(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

func (rt *Runtime) createParams(req newSandboxRequest, v2 bool) (createParams, error) {
	if strings.TrimSpace(req.TemplateID) == "" {
		return createParams{}, errors.New("templateID is required")
	}
	def := rt.cfg.DefaultV1Timeout
	if v2 {
		def = rt.cfg.DefaultV2Timeout
	}
	timeout, err := rt.seconds(req.Timeout, def)
	if err != nil {
		return createParams{}, err
	}
	if len(req.VolumeMounts) > 0 {
		return createParams{}, errors.New("volume mounts are not supported by the local runtime")
	}
	// Internet access is user-mode networking (slirp.go); where that is
	// missing, the sandbox would silently lack what the caller asked for.
	if req.AllowInternetAccess != nil && *req.AllowInternetAccess && rt.noNet != nil {
		return createParams{}, fmt.Errorf("allow_internet_access=true is not available in this local runtime: %v; "+
			"create the sandbox without it", rt.noNet)
	}
	p := createParams{
		templateID: req.TemplateID, timeout: timeout, autoPause: req.AutoPause,
		autoResume: req.AutoResume != nil && req.AutoResume.Enabled,
		secure:     v2 || (req.Secure != nil && *req.Secure),
		allowNet:   req.AllowInternetAccess, metadata: req.Metadata, envVars: req.EnvVars,
		private: req.Network != nil && req.Network.AllowPublicTraffic != nil && !*req.Network.AllowPublicTraffic,
	}
	return p, nil
}

func (rt *Runtime) sandboxBody(s *sandbox) sandboxBody {
	return sandboxBody{
		TemplateID: s.templateID, SandboxID: s.id, ClientID: clientID, EnvdVersion: rt.envdVer,
		Alias: s.alias, EnvdAccessToken: s.accessToken,
		TrafficAccessToken: optional(s.trafficToken),
	}
}

func (rt *Runtime) listed(s *sandbox) listedBody {
	st, endAt := s.snapshot()
	md := s.metadata
	if md == nil {
		md = map[string]string{}
	}
	return listedBody{
		TemplateID: s.templateID, SandboxID: s.id, ClientID: clientID, Alias: s.alias,
		StartedAt: s.startedAt, EndAt: endAt.UTC(), CPUCount: rt.cpuCount(),
		MemoryMB: int(rt.cfg.MemoryBytes >> 20), DiskSizeMB: rt.diskMB(),
		State: st.String(), EnvdVersion: rt.envdVer, Metadata: md, VolumeMounts: []struct{}{},
	}
}

func (rt *Runtime) handleGet(w http.ResponseWriter, _ *http.Request, s *sandbox) {
	onTimeout := "kill"
	if s.autoPause {
		onTimeout = "pause"
	}
	public := s.trafficToken == ""
	writeJSON(w, http.StatusOK, detailBody{
		listedBody: rt.listed(s), EnvdAccessToken: s.accessToken, TrafficAccessToken: optional(s.trafficToken),
		AllowInternetAccess: s.allowNet, Network: networkRequest{AllowPublicTraffic: &public},
		Lifecycle: lifecycleBody{AutoResume: s.autoResume, OnTimeout: onTimeout},
	})
}

func (rt *Runtime) handleKill(w http.ResponseWriter, r *http.Request, s *sandbox) {
	if err := s.kill(r.Context()); err != nil {
		if errors.Is(err, errGone) {
			sandboxNotFound(w, s.id)
			return
		}
		writeError(w, http.StatusInternalServerError, "kill sandbox: %v", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// optional is nil for "", as E2B sends null for a token a sandbox lacks.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// refuseLowSpace answers 507 with the space check's message while it
// fails, and reports whether it did.
func (rt *Runtime) refuseLowSpace(w http.ResponseWriter) bool {
	if rt.cfg.SpaceCheck == nil {
		return false
	}
	err := rt.cfg.SpaceCheck()
	if err == nil {
		return false
	}
	writeError(w, http.StatusInsufficientStorage, "%v", err)
	return true
}
