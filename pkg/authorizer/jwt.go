package authorizer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// JWTConfig says which tokens to accept: signed by a key of JWKSURL, issued
// by Issuer, for Audience.
type JWTConfig struct {
	Issuer   string
	Audience string
	JWKSURL  string
	// Leeway tolerates clock skew; default 30 s.
	Leeway time.Duration
}

type jwtVerifier struct {
	cfg JWTConfig

	mu      sync.Mutex
	keyfunc keyfunc.Keyfunc
	stop    context.CancelFunc // ends the keyfunc's refresh goroutine
	gen     int                // counts key sets loaded, to forget the right one
}

func newJWTVerifier(cfg JWTConfig) (*jwtVerifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" || cfg.JWKSURL == "" {
		return nil, errors.New("authorizer: JWT needs an issuer, an audience and a JWKS URL")
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	return &jwtVerifier{cfg: cfg}, nil
}

// errKeysUnavailable marks a failure to load the identity provider's keys:
// the provider's trouble, not the caller's, so it must not read as a bad
// credential (which API Gateway would cache as a refusal).
var errKeysUnavailable = errors.New("identity provider keys unavailable")

// maxSubjectLen bounds a JWT subject that becomes a principal.
const maxSubjectLen = 200

// validSubject is what a JWT subject may look like to become a principal:
// 1 to maxSubjectLen of the characters identity providers use (Auth0
// "auth0|123", Cognito UUIDs, e-mail addresses), and none that matter to
// the session store. A loop, not a regexp: `[...]{1,200}` compiles to 200
// copies of the class, about 200 KB in 2,600 allocations at every cold
// start of every function that links this package.
func validSubject(s string) bool {
	if s == "" || len(s) > maxSubjectLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("._@|:+=-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// keys fetches the JWKS on first use and keeps it refreshed; a failed first
// fetch is retried on the next token rather than remembered.
func (v *jwtVerifier) keys(ctx context.Context) (keyfunc.Keyfunc, int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keyfunc != nil {
		return v.keyfunc, v.gen, nil
	}
	// The refresh goroutine outlives this request: it lives as long as the
	// key set is in use.
	refreshCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	kf, err := keyfunc.NewDefaultCtx(refreshCtx, []string{v.cfg.JWKSURL})
	if err != nil {
		stop()
		return nil, 0, fmt.Errorf("%w: %w", errKeysUnavailable, err)
	}
	v.gen++
	v.keyfunc, v.stop = kf, stop
	return kf, v.gen, nil
}

// forget drops a key set that never loaded, so the next token fetches
// afresh instead of waiting for the background refresh.
func (v *jwtVerifier) forget(gen int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keyfunc != nil && v.gen == gen {
		v.stop()
		v.keyfunc, v.stop = nil, nil
	}
}

func (v *jwtVerifier) verify(ctx context.Context, token string) (subject string, err error) {
	kf, gen, err := v.keys(ctx)
	if err != nil {
		return "", err
	}
	// No keys at all means the JWKS could not be fetched, not that the
	// token names a key the provider does not have.
	if all, err := kf.Storage().KeyReadAll(ctx); err != nil || len(all) == 0 {
		v.forget(gen)
		return "", fmt.Errorf("%w: no keys from %s (%v)", errKeysUnavailable, v.cfg.JWKSURL, err)
	}
	parsed, err := jwt.Parse(token, kf.Keyfunc,
		jwt.WithIssuer(v.cfg.Issuer),
		jwt.WithAudience(v.cfg.Audience),
		jwt.WithLeeway(v.cfg.Leeway),
		jwt.WithExpirationRequired(),
		jwt.WithValidMethods([]string{"RS256", "RS384", "RS512", "ES256", "ES384", "PS256"}),
	)
	if err != nil {
		return "", err
	}
	sub, err := parsed.Claims.GetSubject()
	if err != nil || !validSubject(sub) {
		return "", errors.New("token has no usable subject")
	}
	return sub, nil
}
