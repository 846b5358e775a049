package localaws

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Limits S3 itself applies to signed requests.
const (
	// maxPresignExpiry is the longest lifetime S3 accepts for a presigned
	// URL (seven days).
	maxPresignExpiry = 7 * 24 * time.Hour
	// maxClockSkew is how far a header-signed request's X-Amz-Date may be
	// from the server's clock.
	maxClockSkew  = 15 * time.Minute
	amzDateFormat = "20060102T150405Z"
	sigAlgorithm  = "AWS4-HMAC-SHA256"
	// unsignedPayload is the payload hash of presigned requests.
	unsignedPayload = "UNSIGNED-PAYLOAD"
)

// sigV4 refuses every request to next that is not signed with the local
// credentials, as S3 does: in the Authorization header or as a presigned
// URL, unexpired, with every signed header (a presigned PUT's
// Content-Length among them) exactly as signed. CORS preflights, which
// browsers send without credentials, pass.
// Any region is accepted, as the signer names it in the credential scope.
type sigV4 struct {
	next   http.Handler
	creds  aws.Credentials
	now    func() time.Time
	signer *v4.Signer
}

func newSigV4(next http.Handler, creds aws.Credentials, now func() time.Time) *sigV4 {
	return &sigV4{next: next, creds: creds, now: now, signer: v4.NewSigner()}
}

// authError is a 403 with S3's code for it.
func authError(code, msg string) error { return s3Error{http.StatusForbidden, code, msg} }

func denied(format string, args ...any) error {
	return authError("AccessDenied", fmt.Sprintf(format, args...))
}

func (s *sigV4) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != "" {
		s.next.ServeHTTP(w, r)
		return
	}
	if err := s.verify(r); err != nil {
		refuse(w, err)
		return
	}
	s.next.ServeHTTP(w, r)
}

// refuse answers a refused request. A browser reading a refused presigned
// URL may see why; the body of a refused upload is not read, so the
// connection cannot be reused.
func refuse(w http.ResponseWriter, err error) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Connection", "close")
	writeS3Error(w, err)
}

func (s *sigV4) verify(r *http.Request) error {
	q := r.URL.Query()
	switch {
	case r.Header.Get("Authorization") != "":
		return s.verifyHeader(r)
	case q.Has("X-Amz-Signature"):
		return s.verifyPresigned(r, q)
	default:
		return denied("Anonymous access is forbidden for this operation")
	}
}

// credential checks a Credential value (AKID/date/region/service/aws4_request)
// against the local credentials and the request's signing time, and
// returns the region it names.
func (s *sigV4) credential(cred string, at time.Time) (region string, err error) {
	parts := strings.Split(cred, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" {
		return "", authError("AuthorizationQueryParametersError", "malformed credential "+strconv.Quote(cred))
	}
	if subtle.ConstantTimeCompare([]byte(parts[0]), []byte(s.creds.AccessKeyID)) != 1 {
		return "", authError("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
	}
	if parts[1] != at.Format("20060102") || parts[2] == "" || parts[3] != "s3" {
		return "", authError("SignatureDoesNotMatch", "the credential scope does not match the request")
	}
	return parts[2], nil
}

func (s *sigV4) verifyHeader(r *http.Request) error {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, sigAlgorithm+" ")
	if !ok {
		return denied("only %s signatures are supported", sigAlgorithm)
	}
	fields := map[string]string{}
	for f := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	at, err := time.Parse(amzDateFormat, r.Header.Get("X-Amz-Date"))
	if err != nil {
		return denied("missing or malformed X-Amz-Date")
	}
	if d := s.now().Sub(at); d > maxClockSkew || d < -maxClockSkew {
		return authError("RequestTimeTooSkewed", "The difference between the request time and the current time is too large.")
	}
	region, err := s.credential(fields["Credential"], at)
	if err != nil {
		return err
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return denied("missing X-Amz-Content-Sha256")
	}
	if strings.HasPrefix(payload, "STREAMING-") {
		return denied("streaming signed payloads are not supported here")
	}
	want, err := s.rebuild(r, r.URL.Query(), fields["SignedHeaders"])
	if err != nil {
		return err
	}
	if err := s.signer.SignHTTP(r.Context(), s.creds, want, payload, "s3", region, at, noEscaping); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	_, wantSig, _ := strings.Cut(want.Header.Get("Authorization"), "Signature=")
	return sameSignature(wantSig, fields["Signature"])
}

func (s *sigV4) verifyPresigned(r *http.Request, q url.Values) error {
	if q.Get("X-Amz-Algorithm") != sigAlgorithm {
		return denied("only %s signatures are supported", sigAlgorithm)
	}
	at, err := time.Parse(amzDateFormat, q.Get("X-Amz-Date"))
	if err != nil {
		return authError("AuthorizationQueryParametersError", "missing or malformed X-Amz-Date")
	}
	secs, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > maxPresignExpiry {
		return authError("AuthorizationQueryParametersError", "X-Amz-Expires must be a number of seconds from 1 to 604800")
	}
	if now := s.now(); now.After(at.Add(time.Duration(secs)*time.Second)) || at.After(now.Add(maxClockSkew)) {
		return denied("Request has expired")
	}
	region, err := s.credential(q.Get("X-Amz-Credential"), at)
	if err != nil {
		return err
	}
	sig := q.Get("X-Amz-Signature")
	q = cloneValues(q)
	q.Del("X-Amz-Signature")
	want, err := s.rebuild(r, q, q.Get("X-Amz-SignedHeaders"))
	if err != nil {
		return err
	}
	signed, _, err := s.signer.PresignHTTP(r.Context(), s.creds, want, unsignedPayload, "s3", region, at,
		noEscaping, func(o *v4.SignerOptions) { o.DisableHeaderHoisting = true })
	if err != nil {
		return fmt.Errorf("presign: %w", err)
	}
	u, err := url.Parse(signed)
	if err != nil {
		return fmt.Errorf("presigned URL: %w", err)
	}
	return sameSignature(u.Query().Get("X-Amz-Signature"), sig)
}

// noEscaping matches the S3 clients, which sign the path as sent.
func noEscaping(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }

// rebuild makes the request the client must have signed: r's method, path
// and query with only the headers it says it signed, so the signer, given
// the client's time, computes the signature the client should have sent.
// Content-Length is signed as the request carries it, so a body of another
// length than signed fails.
func (s *sigV4) rebuild(r *http.Request, q url.Values, signedHeaders string) (*http.Request, error) {
	if signedHeaders == "" {
		return nil, denied("no signed headers")
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	u.RawQuery = q.Encode()
	out := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}}
	out = out.WithContext(r.Context())
	hasHost := false
	for h := range strings.SplitSeq(signedHeaders, ";") {
		switch h {
		case "host":
			hasHost = true
		case "content-length":
			n, err := strconv.ParseInt(r.Header.Get("Content-Length"), 10, 64)
			if err != nil || n != r.ContentLength {
				return nil, authError("SignatureDoesNotMatch", "the request's Content-Length is not the signed one")
			}
			out.ContentLength = n
		default:
			vs, ok := r.Header[http.CanonicalHeaderKey(h)]
			if !ok {
				return nil, authError("SignatureDoesNotMatch", "signed header "+h+" is missing")
			}
			out.Header[http.CanonicalHeaderKey(h)] = vs
		}
	}
	if !hasHost {
		return nil, denied("the host header must be signed")
	}
	return out, nil
}

func sameSignature(want, got string) error {
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return authError("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.")
	}
	return nil
}

func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
