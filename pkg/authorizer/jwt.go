package authorizer

import (
	"context"
	"errors"
	"fmt"
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

// keys fetches the JWKS on first use and keeps it refreshed; a failed first
// fetch is retried on the next token rather than remembered.
func (v *jwtVerifier) keys(ctx context.Context) (keyfunc.Keyfunc, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keyfunc != nil {
		return v.keyfunc, nil
	}
	kf, err := keyfunc.NewDefaultCtx(context.WithoutCancel(ctx), []string{v.cfg.JWKSURL})
	if err != nil {
		return nil, fmt.Errorf("load JWKS: %w", err)
	}
	v.keyfunc = kf
	return kf, nil
}

func (v *jwtVerifier) verify(ctx context.Context, token string) (subject string, err error) {
	kf, err := v.keys(ctx)
	if err != nil {
		return "", err
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
	if err != nil || sub == "" {
		return "", errors.New("token has no subject")
	}
	return sub, nil
}
