//go:build linux

package envd

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
)

const accessTokenHeader = "X-Access-Token"

const (
	opRead  = "read"
	opWrite = "write"
)

func (s *Server) tokenOK(r *http.Request) bool {
	if s.cfg.AccessToken == "" {
		return true
	}
	got := r.Header.Get(accessTokenHeader)
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AccessToken)) == 1
}

var errUnauthorized = errors.New("unauthorized access, please provide a valid access token or method signing if supported")

// tokenAuth guards REST endpoints that accept only the access token.
func (s *Server) tokenAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.tokenOK(r) {
			writeJSONError(w, http.StatusUnauthorized, errUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// rpcAuth checks the access token and the Basic user of a Connect call and
// answers failures in the caller's own protocol and codec.
func (s *Server) rpcAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.tokenOK(r) {
			_ = s.errW.Write(w, r, connect.NewError(connect.CodeUnauthenticated, errUnauthorized))
			return
		}
		if err := s.checkBasicUser(r); err != nil {
			_ = s.errW.Write(w, r, connect.NewError(connect.CodeInvalidArgument, err))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkBasicUser validates `Authorization: Basic base64("<user>:")`. Absent
// means the default user. A name the sandbox does not have (root, in a
// single-user sandbox) is refused rather than silently run as `user`.
func (s *Server) checkBasicUser(r *http.Request) error {
	if r.Header.Get("Authorization") == "" {
		return nil
	}
	name, _, ok := r.BasicAuth()
	if !ok {
		return errors.New("malformed Authorization header: expected Basic base64(\"<user>:\")")
	}
	return s.checkUser(name)
}

func (s *Server) checkUser(name string) error {
	if name == "" || name == s.cfg.User {
		return nil
	}
	if _, ok := s.cfg.Accounts[name]; ok {
		return nil
	}
	return fmt.Errorf("invalid username: '%s' (this sandbox has only the user '%s')", name, s.cfg.User)
}

// FileSignature computes E2B's file URL signature: the operation ("read"
// or "write") on path as user, keyed by the sandbox's access token, with
// the expiration (unix seconds) when the URL has one.
func FileSignature(path, op, user, token string, expiration *int64) string {
	parts := []string{path, op, user, token}
	if expiration != nil {
		parts = append(parts, strconv.FormatInt(*expiration, 10))
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, ":")))
	return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// fileAuth applies the /files rules: no token configured means open; a token
// header, when present, must match; otherwise a valid unexpired signature
// over the path exactly as the client sent it is required.
func (s *Server) fileAuth(r *http.Request, op string, now time.Time) error {
	if s.cfg.AccessToken == "" {
		return nil
	}
	if r.Header.Get(accessTokenHeader) != "" {
		if !s.tokenOK(r) {
			return errors.New("access token present in header but does not match")
		}
		return nil
	}
	q := r.URL.Query()
	sig := q.Get("signature")
	if !q.Has("signature") {
		return errors.New("missing signature query parameter")
	}
	var exp *int64
	if q.Has("signature_expiration") {
		v, err := strconv.ParseInt(q.Get("signature_expiration"), 10, 64)
		if err != nil {
			return errors.New("invalid signature_expiration")
		}
		exp = &v
	}
	want := FileSignature(q.Get("path"), op, q.Get("username"), s.cfg.AccessToken, exp)
	if subtle.ConstantTimeCompare([]byte(want), []byte(sig)) != 1 {
		return errors.New("invalid signature")
	}
	if exp != nil && *exp < now.Unix() {
		return errors.New("signature is already expired")
	}
	return nil
}
