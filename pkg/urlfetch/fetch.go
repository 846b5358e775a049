// Package urlfetch fetches URLs that users name, for uploads from URLs,
// behind a guard against server-side request forgery: only http and https,
// every connection (each redirect hop included, at most MaxRedirects) checked
// at the moment it is made against the address classes a user may not reach
// (loopback, private, link-local and cloud metadata, shared, unique-local,
// multicast, unspecified, broadcast, reserved, and the IPv6 forms that embed
// such IPv4 addresses), no proxy from the environment. Private addresses
// are reachable only when Options.AllowPrivate says so.
package urlfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Fetcher is session.URLFetcher over net/http.
type Fetcher struct {
	client *http.Client
}

// New returns a Fetcher.
func New(o Options) *Fetcher {
	return &Fetcher{client: newClient(o.withDefaults())}
}

var _ session.URLFetcher = (*Fetcher)(nil)

// Close drops idle connections.
func (f *Fetcher) Close() { f.client.CloseIdleConnections() }

// Fetch sends a GET for rawURL and returns once the response headers are in.
// Failures are *session.Error whose Detail names the host and the cause in
// words; they never carry the internal error chain.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*session.FetchedURL, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, session.Errorf(session.ErrInvalid, "not an http or https URL")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, session.Errorf(session.ErrInvalid, "not a valid URL")
	}
	req.Header.Set("User-Agent", "sessionbox-url-upload")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, describe(ctx, u, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 || resp.StatusCode == http.StatusPartialContent {
		_ = resp.Body.Close()
		return nil, session.Errorf(session.ErrUnavailable, "%s answered %s", resp.Request.URL.Host, resp.Status)
	}
	return &session.FetchedURL{
		Body: resp.Body,
		Name: FileName(resp.Header.Get("Content-Disposition")),
		Size: resp.ContentLength,
	}, nil
}

// describe turns a failed request into words a caller can act on.
func describe(ctx context.Context, u *url.URL, err error) error {
	host := u.Host
	var ue *url.Error
	if errors.As(err, &ue) {
		if hop, perr := url.Parse(ue.URL); perr == nil && hop.Host != "" {
			host = hop.Host
		}
	}
	var (
		blocked *BlockedError
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		hostErr x509.HostnameError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &blocked):
		return &session.Error{Kind: session.ErrForbidden, Detail: fmt.Sprintf(
			"refused: %s connects to %s, a %s address, which this deployment does not fetch from", host, blocked.Where(), blocked.Class)}
	case errors.Is(err, errTooManyRedirects):
		return session.Errorf(session.ErrInvalid, "more than %d redirects (the last to %s)", MaxRedirects, host)
	case errors.Is(err, errScheme):
		return session.Errorf(session.ErrInvalid, "redirected to a URL that is neither http nor https")
	case ctx.Err() != nil:
		return session.Errorf(session.ErrTimeout, "%s did not answer in time", host)
	case errors.As(err, &dnsErr):
		return session.Errorf(session.ErrUnavailable, "%s could not be resolved", strings.TrimSuffix(dnsErr.Name, "."))
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr):
		return session.Errorf(session.ErrUnavailable, "%s presented a certificate that is not trusted", host)
	case errors.As(err, &netErr) && netErr.Timeout():
		return session.Errorf(session.ErrTimeout, "%s did not answer in time", host)
	}
	return session.Errorf(session.ErrUnavailable, "could not fetch from %s", host)
}

// FileName is the file name a Content-Disposition header gives (RFC 6266),
// filename* preferred over filename, or "" when it gives none. The name is
// as sent: callers sanitize it.
func FileName(disposition string) string {
	if disposition == "" {
		return ""
	}
	_, params, err := mime.ParseMediaType(disposition)
	if err == nil && params["filename"] != "" {
		return params["filename"]
	}
	// mime decodes filename* in UTF-8 only; RFC 6266 asks for ISO-8859-1
	// too.
	return latin1FileName(disposition)
}

// latin1FileName decodes filename*=ISO-8859-1'lang'value.
func latin1FileName(disposition string) string {
	for _, part := range strings.Split(disposition, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "filename*") {
			continue
		}
		charset, rest, ok := strings.Cut(strings.TrimSpace(v), "'")
		if !ok || !strings.EqualFold(charset, "iso-8859-1") {
			return ""
		}
		_, enc, ok := strings.Cut(rest, "'")
		if !ok {
			return ""
		}
		raw, err := url.PathUnescape(enc)
		if err != nil {
			return ""
		}
		runes := make([]rune, len(raw))
		for i := 0; i < len(raw); i++ {
			runes[i] = rune(raw[i])
		}
		return string(runes)
	}
	return ""
}
