package blob_test

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/blob"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// awsLikeClient signs as production does (virtual-hosted URLs on the real
// S3 endpoint, temporary credentials); presigning needs no network.
func awsLikeClient() *s3.Client {
	return s3.New(s3.Options{
		Region:      "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session-token"),
	})
}

func parse(t *testing.T, req session.PresignedRequest) (*url.URL, url.Values) {
	t.Helper()
	u, err := url.Parse(req.URL)
	if err != nil {
		t.Fatalf("presigned URL %q: %v", req.URL, err)
	}
	return u, u.Query()
}

func signedHeaders(q url.Values) []string {
	return strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
}

func TestPresignPut(t *testing.T) {
	b := blob.New(awsLikeClient(), "transfers")
	tests := []struct {
		name, key, contentType string
		size                   int64
		wantPath               string
		wantSigned             []string
	}{
		{"plain", "tenants/acme/sessions/s1/up/data.csv", "text/csv", 25 << 20,
			"/tenants/acme/sessions/s1/up/data.csv", []string{"content-length", "content-type", "host"}},
		{"no content type", "k", "", 1, "/k", []string{"content-length", "host"}},
		{"key needing escapes", "tenants/acme/s 1/a+b/ü?.txt", "application/octet-stream", 7,
			"/tenants/acme/s%201/a%2Bb/%C3%BC%3F.txt", []string{"content-length", "content-type", "host"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now().Truncate(time.Second)
			req, err := b.PresignPut(t.Context(), tc.key, tc.size, tc.contentType, 0)
			if err != nil {
				t.Fatal(err)
			}
			u, q := parse(t, req)
			if req.Method != "PUT" {
				t.Errorf("method %s", req.Method)
			}
			if u.Host != "transfers.s3.eu-west-1.amazonaws.com" || u.EscapedPath() != tc.wantPath {
				t.Errorf("host %s path %s, want path %s", u.Host, u.EscapedPath(), tc.wantPath)
			}
			if got := signedHeaders(q); !slices.Equal(got, tc.wantSigned) {
				t.Errorf("signed headers %v, want %v", got, tc.wantSigned)
			}
			if q.Get("X-Amz-Expires") != "300" || q.Get("X-Amz-Security-Token") != "session-token" {
				t.Errorf("expires %q token %q", q.Get("X-Amz-Expires"), q.Get("X-Amz-Security-Token"))
			}
			if req.Headers["Content-Length"] != strconv.FormatInt(tc.size, 10) || req.Headers["Content-Type"] != tc.contentType {
				t.Errorf("headers to send %v", req.Headers)
			}
			if _, ok := req.Headers["Host"]; ok {
				t.Error("Host listed among headers to send")
			}
			if d := req.ExpiresAt.Sub(before); d < 5*time.Minute || d > 5*time.Minute+2*time.Second {
				t.Errorf("expires at %v, %v after signing", req.ExpiresAt, d)
			}
		})
	}
}

func TestPresignGet(t *testing.T) {
	b := blob.New(awsLikeClient(), "transfers")
	req, err := b.PresignGet(t.Context(), "tenants/acme/out put.bin", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	u, q := parse(t, req)
	if req.Method != "GET" || u.EscapedPath() != "/tenants/acme/out%20put.bin" || q.Get("X-Amz-Expires") != "60" {
		t.Fatalf("method %s path %s expires %s", req.Method, u.EscapedPath(), q.Get("X-Amz-Expires"))
	}
	if got := signedHeaders(q); !slices.Equal(got, []string{"host"}) {
		t.Fatalf("signed headers %v", got)
	}
}

func TestPresignExpiry(t *testing.T) {
	tests := []struct {
		name string
		opts []blob.Option
		ttl  time.Duration
		want string // X-Amz-Expires
	}{
		{"default", nil, 0, "300"},
		{"asked", nil, time.Minute, "60"},
		{"cut to the maximum", nil, time.Hour, "900"},
		{"never below a second", nil, 10 * time.Millisecond, "1"},
		{"configured default", []blob.Option{blob.WithExpiry(2*time.Minute, 10*time.Minute)}, 0, "120"},
		{"configured maximum", []blob.Option{blob.WithExpiry(2*time.Minute, 10*time.Minute)}, time.Hour, "600"},
		{"default above maximum", []blob.Option{blob.WithExpiry(time.Hour, time.Minute)}, 0, "60"},
		{"SigV4 ceiling", []blob.Option{blob.WithExpiry(0, 30*24*time.Hour)}, 30 * 24 * time.Hour, "604800"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := blob.New(awsLikeClient(), "transfers", tc.opts...)
			for _, presign := range []func() (session.PresignedRequest, error){
				func() (session.PresignedRequest, error) { return b.PresignPut(t.Context(), "k", 1, "", tc.ttl) },
				func() (session.PresignedRequest, error) { return b.PresignGet(t.Context(), "k", tc.ttl) },
			} {
				req, err := presign()
				if err != nil {
					t.Fatal(err)
				}
				if _, q := parse(t, req); q.Get("X-Amz-Expires") != tc.want {
					t.Fatalf("X-Amz-Expires %s, want %s", q.Get("X-Amz-Expires"), tc.want)
				}
			}
		})
	}
}

func TestPresignRefusesBadInput(t *testing.T) {
	b := blob.New(awsLikeClient(), "transfers")
	ctx := t.Context()
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"negative size", second(b.PresignPut(ctx, "k", -1, "", 0)), session.ErrInvalid},
		{"zero size", second(b.PresignPut(ctx, "k", 0, "", 0)), session.ErrInvalid},
		{"over 5 GiB", second(b.PresignPut(ctx, "k", 5<<30+1, "", 0)), session.ErrTooLarge},
		{"empty key", second(b.PresignPut(ctx, "", 1, "", 0)), session.ErrInvalid},
		{"long key", second(b.PresignGet(ctx, strings.Repeat("k", 1025), 0)), session.ErrInvalid},
		{"bad UTF-8 key", second(b.PresignGet(ctx, "\xff", 0)), session.ErrInvalid},
		{"negative lifetime", second(b.PresignGet(ctx, "k", -time.Second)), session.ErrInvalid},
	}
	for _, tc := range tests {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }
