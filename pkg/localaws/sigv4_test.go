package localaws_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/localaws"
)

// s3Stand starts the S3 stand-in with a bucket holding one object.
func s3Stand(t *testing.T) (endpoint string, client *s3.Client) {
	t.Helper()
	endpoint, stop, err := localaws.StartS3(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	client = localaws.S3Client(endpoint, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	if err := localaws.EnsureBucket(t.Context(), client, "bkt"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("secret")}); err != nil {
		t.Fatalf("signed PutObject: %v", err)
	}
	return endpoint, client
}

func send(t *testing.T, method, u string, body []byte, hdr http.Header) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Code string }
	_ = xml.Unmarshal(b, &e)
	return resp.StatusCode, e.Code, b
}

func presignGet(t *testing.T, client *s3.Client, key string) string {
	t.Helper()
	req, err := s3.NewPresignClient(client).PresignGetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return req.URL
}

// TestS3RefusesUnsigned: no request without a valid signature reaches the
// objects, whatever its method; the refusal is S3's 403 XML error.
func TestS3RefusesUnsigned(t *testing.T) {
	t.Parallel()
	endpoint, client := s3Stand(t)
	creds, err := client.Options().Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	good := presignGet(t, client, "k")
	tamper := func(f func(q url.Values, u *url.URL)) string {
		u, _ := url.Parse(good)
		q := u.Query()
		f(q, u)
		u.RawQuery = q.Encode()
		return u.String()
	}
	cases := []struct {
		name, method, url string
		body              []byte
		hdr               http.Header
		code              string
	}{
		{"unsigned get", "GET", endpoint + "/bkt/k", nil, nil, "AccessDenied"},
		{"unsigned put", "PUT", endpoint + "/bkt/other", []byte("x"), nil, "AccessDenied"},
		{"unsigned delete", "DELETE", endpoint + "/bkt/k", nil, nil, "AccessDenied"},
		{"unsigned bucket listing", "GET", endpoint + "/bkt", nil, nil, "AccessDenied"},
		{"unsigned service listing", "GET", endpoint + "/", nil, nil, "AccessDenied"},
		{"forged authorization", "GET", endpoint + "/bkt/k", nil, http.Header{
			"Authorization":        {"AWS4-HMAC-SHA256 Credential=" + creds.AccessKeyID + "/" + time.Now().UTC().Format("20060102") + "/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + strings.Repeat("0", 64)},
			"X-Amz-Date":           {time.Now().UTC().Format("20060102T150405Z")},
			"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"},
		}, "SignatureDoesNotMatch"},
		{"wrong access key", "GET", tamper(func(q url.Values, _ *url.URL) {
			q.Set("X-Amz-Credential", strings.Replace(q.Get("X-Amz-Credential"), creds.AccessKeyID, "AKIAOTHER", 1))
		}), nil, nil, "InvalidAccessKeyId"},
		{"signature removed", "GET", tamper(func(q url.Values, _ *url.URL) { q.Del("X-Amz-Signature") }), nil, nil, "AccessDenied"},
		{"signature altered", "GET", tamper(func(q url.Values, _ *url.URL) {
			s := []byte(q.Get("X-Amz-Signature"))
			s[0] ^= 1
			q.Set("X-Amz-Signature", string(s))
		}), nil, nil, "SignatureDoesNotMatch"},
		{"expiry extended", "GET", tamper(func(q url.Values, _ *url.URL) { q.Set("X-Amz-Expires", "604800") }), nil, nil, "SignatureDoesNotMatch"},
		{"expiry removed", "GET", tamper(func(q url.Values, _ *url.URL) { q.Del("X-Amz-Expires") }), nil, nil, "AuthorizationQueryParametersError"},
		{"other key", "GET", tamper(func(_ url.Values, u *url.URL) { u.Path = "/bkt/other" }), nil, nil, "SignatureDoesNotMatch"},
		{"other method", "DELETE", good, nil, nil, "SignatureDoesNotMatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			status, code, body := send(t, c.method, c.url, c.body, c.hdr)
			if status != http.StatusForbidden || code != c.code {
				t.Fatalf("%s: %d %s, want 403 %s: %s", c.name, status, code, c.code, body)
			}
		})
	}
	// The object is untouched and the genuine URL still works.
	if status, _, body := send(t, "GET", good, nil, nil); status != 200 || string(body) != "secret" {
		t.Fatalf("genuine presigned GET: %d %q", status, body)
	}
}

// TestS3PresignedExpiry: a presigned URL works until X-Amz-Expires has
// passed since its signing time, then it is refused.
func TestS3PresignedExpiry(t *testing.T) {
	t.Parallel()
	endpoint, client := s3Stand(t)
	creds, err := client.Options().Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	presignAt := func(at time.Time, expires string) string {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", endpoint+"/bkt/k?X-Amz-Expires="+expires, nil)
		u, _, err := v4.NewSigner().PresignHTTP(t.Context(), creds, req, "UNSIGNED-PAYLOAD", "s3", localaws.Region, at)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	now := time.Now()
	cases := []struct {
		name   string
		url    string
		status int
	}{
		{"fresh", presignAt(now.Add(-time.Minute), "3600"), 200},
		{"expired", presignAt(now.Add(-2*time.Hour), "3600"), 403},
		{"signed in the future", presignAt(now.Add(time.Hour), "60"), 403},
		{"beyond seven days", presignAt(now, "604801"), 403},
	}
	for _, c := range cases {
		if status, code, body := send(t, "GET", c.url, nil, nil); status != c.status {
			t.Errorf("%s: %d %s, want %d: %s", c.name, status, code, c.status, body)
		}
	}
}

// TestS3PresignedPutSize: a presigned PUT takes exactly the signed number of
// bytes; a longer or shorter body is refused and nothing is stored.
func TestS3PresignedPutSize(t *testing.T) {
	t.Parallel()
	_, client := s3Stand(t)
	req, err := s3.NewPresignClient(client).PresignPutObject(t.Context(),
		&s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("up"), ContentLength: aws.Int64(10)}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10 << 20, 11, 9} {
		put, _ := http.NewRequestWithContext(t.Context(), "PUT", req.URL, bytes.NewReader(bytes.Repeat([]byte("x"), n)))
		resp, err := http.DefaultClient.Do(put)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct{ Code string }
			_ = xml.Unmarshal(b, &e)
			if resp.StatusCode != http.StatusForbidden || e.Code != "SignatureDoesNotMatch" {
				t.Fatalf("PUT of %d bytes on a 10-byte ticket: %d %s", n, resp.StatusCode, b)
			}
		} else if n < 1<<20 {
			// Only a large body may be cut off unread, as S3 does.
			t.Fatalf("PUT of %d bytes: %v", n, err)
		}
		if _, err := client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("up")}); err == nil {
			t.Fatalf("a refused %d-byte PUT stored the object", n)
		}
	}
	if status, _, body := send(t, "PUT", req.URL, []byte("0123456789"), nil); status != 200 {
		t.Fatalf("PUT of the signed 10 bytes: %d %s", status, body)
	}
}

// TestS3BrowserPreflight: a browser's CORS preflight, which carries no
// credentials, is answered so presigned URLs work from a page.
func TestS3BrowserPreflight(t *testing.T) {
	t.Parallel()
	endpoint, _ := s3Stand(t)
	req, _ := http.NewRequestWithContext(t.Context(), "OPTIONS", endpoint+"/bkt/up", nil)
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Access-Control-Request-Method", "PUT")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") == "" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "PUT") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestS3RefusesWellKnownCredentials: requests correctly signed with the
// credentials earlier versions wrote in the source, or with any other than
// the data dir's own, are refused; the data dir's file is owner-only and
// kept across restarts, so a URL presigned before one works after it.
func TestS3RefusesWellKnownCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	endpoint, stop, err := localaws.StartS3(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	client := localaws.S3Client(endpoint, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	if err := localaws.EnsureBucket(t.Context(), client, "bkt"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("secret")}); err != nil {
		t.Fatal(err)
	}
	good := presignGet(t, client, "k")
	info, err := os.Stat(filepath.Join(dir, localaws.CredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", localaws.CredentialsFile, info.Mode().Perm())
	}
	stop()
	// Restarted on the same dir: same credentials, the old URL works.
	endpoint, stop, err = localaws.StartS3(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if !strings.HasPrefix(good, endpoint+"/") {
		t.Fatalf("restarted on %s, not on the port of %s", endpoint, good)
	}
	if status, _, body := send(t, "GET", good, nil, nil); status != 200 || string(body) != "secret" {
		t.Fatalf("URL presigned before the restart: %d %q", status, body)
	}
	for _, c := range []struct{ name, id, secret string }{
		{"old well-known", "sessionbox-local", "sessionbox-local-secret"},
		{"other", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			forged := localaws.S3Client(endpoint, func(o *s3.Options) {
				o.RetryMaxAttempts = 1
				o.Credentials = credentials.NewStaticCredentialsProvider(c.id, c.secret, "")
			})
			_, err := forged.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
			var re *awshttp.ResponseError
			if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusForbidden {
				t.Fatalf("listing signed with %s credentials: %v, want 403", c.name, err)
			}
			presigned, err := s3.NewPresignClient(forged).PresignGetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
			if err != nil {
				t.Fatal(err)
			}
			if status, code, _ := send(t, "GET", presigned.URL, nil, nil); status != http.StatusForbidden {
				t.Fatalf("URL presigned with %s credentials: %d %s, want 403", c.name, status, code)
			}
		})
	}
}

// TestS3CredentialsFileLoose: a credentials file others may read is
// refused at start, naming it, rather than trusted.
func TestS3CredentialsFileLoose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := localaws.S3Credentials(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, localaws.CredentialsFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := localaws.StartS3(t.Context(), dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("StartS3 with a world-readable credentials file: %v", err)
	}
}
