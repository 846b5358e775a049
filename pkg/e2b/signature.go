package e2b

import (
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"time"
)

// SignedURLOptions tune DownloadURL and UploadURL.
type SignedURLOptions struct {
	User string
	// Expires limits how long the URL works; zero means it never expires.
	Expires time.Duration
	// Now is the reference time for Expires; zero means time.Now().
	Now time.Time
}

// DownloadURL returns a URL from which anyone can GET the file at path,
// signed with the sandbox access token. It needs no routing headers: on E2B
// it is https://49983-<id>.<domain>/files?...; with Config.SandboxURL set it
// is <SandboxURL>/_sandboxes/<id>/49983/files?..., a path the local runtime
// routes (see Config.SandboxURL).
func (s *Sandbox) DownloadURL(path string, opts SignedURLOptions) (string, error) {
	return s.fileURL(path, "read", opts)
}

// UploadURL returns a URL to which anyone can POST a file for path
// (multipart form field "file" or application/octet-stream).
func (s *Sandbox) UploadURL(path string, opts SignedURLOptions) (string, error) {
	return s.fileURL(path, "write", opts)
}

func (s *Sandbox) fileURL(path, operation string, opts SignedURLOptions) (string, error) {
	q := url.Values{"path": {path}}
	user := s.user(opts.User)
	if user != "" {
		q.Set("username", user)
	}
	if s.accessToken == "" && opts.Expires > 0 {
		return "", errNoAccessToken
	}
	if s.accessToken != "" {
		var exp int64
		if opts.Expires > 0 {
			now := opts.Now
			if now.IsZero() {
				now = time.Now()
			}
			exp = now.Add(opts.Expires).Unix()
			q.Set("signature_expiration", strconv.FormatInt(exp, 10))
		}
		q.Set("signature", fileSignature(path, operation, user, s.accessToken, exp))
	}
	base := s.client.cfg.sandboxBaseURL(s.ID, s.Domain, EnvdPort, true)
	return base + "/files?" + q.Encode(), nil
}

// fileSignature is envd's v1 signature:
// "v1_" + base64(sha256("path:operation:user:token[:expiration]")) without padding.
func fileSignature(path, operation, user, token string, expiration int64) string {
	raw := path + ":" + operation + ":" + user + ":" + token
	if expiration > 0 {
		raw += ":" + strconv.FormatInt(expiration, 10)
	}
	sum := sha256.Sum256([]byte(raw))
	return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
}
