//go:build linux

package e2blocal

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/envd"
)

// Signed file URLs the SDK builds when E2B_SANDBOX_URL is set look like
// <sandbox url>/files?path=…&signature=…&signature_expiration=…: nothing in
// them names the sandbox. The runtime knows every sandbox's access token, so
// it routes such a request to the sandbox whose token verifies the
// signature; envd then checks it again (and its expiration) as usual.
//
// Finding that sandbox costs one SHA-256 per secured sandbox (about 0.3 µs
// each: ~150 µs at the default 500 sandboxes). Verified signatures are
// remembered, so a URL used again costs one map lookup, and scans are rate
// limited so a flood of forged signatures costs at most signedScanRate
// scans a second (under 10 ms of CPU a second at 500 sandboxes); past it
// the request gets 429.
const (
	envdPort         = "49983"
	signedScanRate   = 50 // scans per second, sustained
	signedScanBurst  = 100
	signedCacheLimit = 4096 // remembered signatures; the map is reset past it
)

// signedRouter maps signatures to sandboxes.
type signedRouter struct {
	mu     sync.Mutex
	known  map[string]string // signature -> sandbox id
	tokens float64           // scan budget, refilled at signedScanRate
	last   time.Time
}

func newSignedRouter() *signedRouter {
	return &signedRouter{known: map[string]string{}, tokens: signedScanBurst}
}

// signedFileRequest reports whether r is a signed /files request: its
// signature and the operation (method) the signature must cover.
func signedFileRequest(r *http.Request) (sig, op string, ok bool) {
	if r.URL.Path != "/files" {
		return "", "", false
	}
	switch r.Method {
	case http.MethodGet:
		op = "read"
	case http.MethodPost:
		op = "write"
	default:
		return "", "", false
	}
	sig = r.URL.Query().Get("signature")
	// v1_ and 43 characters of unpadded base64 (32 bytes).
	if len(sig) != 46 || !strings.HasPrefix(sig, "v1_") {
		return "", "", false
	}
	return sig, op, true
}

// signedTarget finds the sandbox whose access token produced the request's
// signature; ok is false when none does, limited when the scan budget is
// spent.
func (rt *Runtime) signedTarget(r *http.Request, sig, op string) (s *sandbox, limited bool) {
	sr := rt.signed
	sr.mu.Lock()
	id, hit := sr.known[sig]
	sr.mu.Unlock()
	if hit {
		if s := rt.lookup(id); s != nil {
			return s, false
		}
	}
	if !sr.take(time.Now()) {
		return nil, true
	}
	q := r.URL.Query()
	var exp *int64
	if raw := q.Get("signature_expiration"); raw != "" {
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, false
		}
		exp = &v
	}
	path, user := q.Get("path"), q.Get("username")
	for _, c := range rt.secured() {
		want := envd.FileSignature(path, op, user, c.accessToken, exp)
		if subtle.ConstantTimeCompare([]byte(want), []byte(sig)) == 1 {
			sr.remember(sig, c.id)
			return c, false
		}
	}
	return nil, false
}

// take spends one scan from the budget.
func (sr *signedRouter) take(now time.Time) bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if !sr.last.IsZero() {
		sr.tokens = min(signedScanBurst, sr.tokens+now.Sub(sr.last).Seconds()*signedScanRate)
	}
	sr.last = now
	if sr.tokens < 1 {
		return false
	}
	sr.tokens--
	return true
}

func (sr *signedRouter) remember(sig, id string) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if len(sr.known) >= signedCacheLimit {
		clear(sr.known)
	}
	sr.known[sig] = id
}

// secured lists the sandboxes that have an access token.
func (rt *Runtime) secured() []*sandbox {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]*sandbox, 0, len(rt.sandboxes))
	for _, s := range rt.sandboxes {
		if s.accessToken != "" {
			out = append(out, s)
		}
	}
	return out
}

// signedUnauthorized answers a signed request no sandbox's token verifies,
// in envd's error shape.
func signedUnauthorized(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	}{msg, status})
}
