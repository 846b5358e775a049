package blob_test

import (
	"crypto/sha256"
	"errors"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/spf13/afero"

	"github.com/sessionbox/sessionbox/pkg/blob"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/thirdparty"
)

const bucket = "transfers"

// fakeS3 is gofakes3 with an on-disk backend, in process, reached through
// the real SDK client; failing, when set, makes it answer 503 SlowDown.
type fakeS3 struct {
	client  *s3.Client
	blobs   *blob.Blobs
	failing atomic.Bool
}

func newFakeS3(t testing.TB) *fakeS3 {
	t.Helper()
	backend, err := s3afero.MultiBucket(afero.NewBasePathFs(afero.NewOsFs(), t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeS3{}
	faker := gofakes3.New(backend, gofakes3.WithoutVersioning()).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<Error><Code>SlowDown</Code><Message>injected</Message></Error>`)
			return
		}
		faker.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	// gofakes3 checks no signature, but presigning needs credentials to
	// sign with: any will do.
	f.client = localaws.S3Client(srv.URL, fastRetries, func(o *s3.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider("gofakes3", "gofakes3", "")
	})
	if err := localaws.EnsureBucket(t.Context(), f.client, bucket); err != nil {
		t.Fatal(err)
	}
	f.blobs = blob.New(f.client, bucket)
	return f
}

func fastRetries(o *s3.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 2
		so.RateLimiter = ratelimit.None
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
	})
}

// server is an S3 implementation the contract tests run against.
type server struct {
	name string
	// start gives a client of a fresh server with the bucket created.
	start func(t testing.TB) *s3.Client
	// checksSignatures: the server verifies SigV4 (presigned URLs included),
	// their expiry and the signed content length, as S3 does.
	checksSignatures bool
}

// servers are the in-process stand-in local mode uses, and versitygw, an S3
// gateway nobody here wrote that checks signatures as S3 does. The
// versitygw client is configured like production's: the SDK's default
// checksums, not localaws's reduced ones.
var servers = []server{
	{name: "gofakes3", start: func(t testing.TB) *s3.Client { return newFakeS3(t).client }},
	{name: "versitygw", checksSignatures: true, start: func(t testing.TB) *s3.Client {
		c := thirdparty.VersityGW(t).Client(fastRetries)
		if err := localaws.EnsureBucket(t.Context(), c, bucket); err != nil {
			t.Fatal(err)
		}
		return c
	}},
}

// eachServer runs test once per server, in parallel, on a fresh one.
func eachServer(t *testing.T, test func(t *testing.T, srv server, b *blob.Blobs)) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			test(t, srv, blob.New(srv.start(t), bucket))
		})
	}
}

// data is a deterministic, incompressible stream of n bytes that is not a
// Seeker, as a sandbox's file stream would be.
func data(seed uint64, n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{byte(seed)}), n)
}

func digest(t testing.TB, r io.Reader) ([32]byte, int64) {
	t.Helper()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, n
}

func readBack(t *testing.T, b *blob.Blobs, key string) ([32]byte, int64) {
	t.Helper()
	body, size, err := b.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer body.Close()
	sum, n := digest(t, body)
	if n != size {
		t.Fatalf("Open(%s) said %d bytes, body had %d", key, size, n)
	}
	return sum, n
}

func TestPutOpenDelete(t *testing.T) {
	eachServer(t, testPutOpenDelete)
}

func testPutOpenDelete(t *testing.T, _ server, b *blob.Blobs) {
	ctx := t.Context()
	key := "tenants/acme/sessions/s 1/ü+.txt"
	if err := b.Put(ctx, key, strings.NewReader("hello"), 5, "text/plain"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	body, size, err := b.Open(ctx, key)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	got, _ := io.ReadAll(body)
	body.Close()
	if string(got) != "hello" || size != 5 {
		t.Fatalf("read %q (%d bytes)", got, size)
	}
	if err := b.Delete(ctx, key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, _, err := b.Open(ctx, key); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Open after delete: %v, want ErrNotFound", err)
	}
	if err := b.Delete(ctx, key); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

func TestOpenMissing(t *testing.T) {
	eachServer(t, func(t *testing.T, _ server, b *blob.Blobs) {
		if _, _, err := b.Open(t.Context(), "nothing/here"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Open: %v, want ErrNotFound", err)
		}
	})
}

// TestPutLarge streams 24 MiB from a plain io.Reader (multipart: five
// parts) with the size known and unknown, and reads it back.
func TestPutLarge(t *testing.T) {
	const size = 24 << 20
	want, _ := digest(t, data(7, size))
	eachServer(t, func(t *testing.T, _ server, b *blob.Blobs) {
		for _, declared := range []int64{size, -1} {
			key := "large/" + strconv.FormatInt(declared, 10)
			if err := b.Put(t.Context(), key, data(7, size), declared, "application/octet-stream"); err != nil {
				t.Fatalf("Put(size %d): %v", declared, err)
			}
			if got, n := readBack(t, b, key); got != want || n != size {
				t.Fatalf("size %d: read back %d bytes, hash match %v", declared, n, got == want)
			}
		}
	})
}

// TestPutWrongLength makes sure a stream that does not match its declared
// size fails and leaves no object, for single and multipart uploads.
func TestPutWrongLength(t *testing.T) {
	eachServer(t, testPutWrongLength)
}

func testPutWrongLength(t *testing.T, _ server, b *blob.Blobs) {
	tests := []struct {
		name           string
		actual, claims int64
	}{
		{"short single", 10, 11},
		{"long single", 12, 11},
		{"short multipart", 12 << 20, 13 << 20},
		{"long multipart", 12<<20 + 1, 12 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := "wrong/" + strings.ReplaceAll(tc.name, " ", "-")
			err := b.Put(t.Context(), key, data(1, tc.actual), tc.claims, "")
			if !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("Put: %v, want ErrInvalid", err)
			}
			if _, _, err := b.Open(t.Context(), key); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("object left behind: %v", err)
			}
		})
	}
}

func TestUnavailable(t *testing.T) {
	f := newFakeS3(t)
	ctx := t.Context()
	if err := f.blobs.Put(ctx, "k", strings.NewReader("x"), 1, ""); err != nil {
		t.Fatal(err)
	}
	f.failing.Store(true)
	if _, _, err := f.blobs.Open(ctx, "k"); !errors.Is(err, session.ErrUnavailable) {
		t.Errorf("Open: %v, want ErrUnavailable", err)
	}
	if err := f.blobs.Put(ctx, "k2", strings.NewReader("x"), 1, ""); !errors.Is(err, session.ErrUnavailable) {
		t.Errorf("Put: %v, want ErrUnavailable", err)
	}
	if err := f.blobs.Delete(ctx, "k"); !errors.Is(err, session.ErrUnavailable) {
		t.Errorf("Delete: %v, want ErrUnavailable", err)
	}
	f.failing.Store(false)
	if got, n := readBack(t, f.blobs, "k"); n != 1 || got != sha256.Sum256([]byte("x")) {
		t.Fatal("object changed while failing")
	}
}

// TestPresignedRoundTrip uploads 24 MiB with plain net/http through a
// presigned PUT, as a browser or curl would, and downloads it through a
// presigned GET.
func TestPresignedRoundTrip(t *testing.T) {
	const size = 24 << 20
	want, _ := digest(t, data(3, size))
	eachServer(t, func(t *testing.T, _ server, b *blob.Blobs) {
		ctx := t.Context()
		key := "tenants/acme/sessions/s1/uploads/big file+1.bin"
		put, err := b.PresignPut(ctx, key, size, "application/octet-stream", 0)
		if err != nil {
			t.Fatal(err)
		}
		if status := send(t, put, data(3, size), size, nil); status != http.StatusOK {
			t.Fatalf("presigned PUT: %d", status)
		}
		if got, n := readBack(t, b, key); got != want || n != size {
			t.Fatalf("uploaded object: %d bytes, hash match %v", n, got == want)
		}

		get, err := b.PresignGet(ctx, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(get.URL)
		if err != nil {
			t.Fatalf("presigned GET: %v", err)
		}
		defer resp.Body.Close()
		got, n := digest(t, resp.Body)
		if resp.StatusCode != http.StatusOK || got != want || n != size {
			t.Fatalf("presigned GET: %s, %d bytes, hash match %v", resp.Status, n, got == want)
		}
	})
}

// TestPresignedRefusals checks what a presigned URL does not allow, on the
// servers that verify signatures as S3 does: another length or content type
// than the signed ones, another key, a tampered signature, an expired URL.
// Each refused upload leaves no object.
func TestPresignedRefusals(t *testing.T) {
	eachServer(t, func(t *testing.T, srv server, b *blob.Blobs) {
		if !srv.checksSignatures {
			t.Skip(srv.name + " does not verify signatures; versitygw does")
		}
		ctx := t.Context()
		const key = "tenants/acme/up/signed.csv"
		put, err := b.PresignPut(ctx, key, 10, "text/csv", 0)
		if err != nil {
			t.Fatal(err)
		}
		tampered := func(r session.PresignedRequest, from, to string) session.PresignedRequest {
			r.URL = strings.Replace(r.URL, from, to, 1)
			return r
		}
		sig := put.URL[strings.Index(put.URL, "X-Amz-Signature=")+len("X-Amz-Signature="):][:8]
		tests := []struct {
			name    string
			req     session.PresignedRequest
			length  int64
			headers map[string]string
		}{
			{"shorter body", put, 9, nil},
			{"longer body", put, 11, nil},
			{"other content type", put, 10, map[string]string{"Content-Type": "text/html"}},
			{"other key", tampered(put, "signed.csv", "other.csv"), 10, nil},
			{"tampered signature", tampered(put, "X-Amz-Signature="+sig, "X-Amz-Signature=00000000"), 10, nil},
		}
		for _, tc := range tests {
			if status := send(t, tc.req, data(1, tc.length), tc.length, tc.headers); status != http.StatusForbidden {
				t.Errorf("%s: status %d, want 403", tc.name, status)
			}
		}
		if _, _, err := b.Open(ctx, key); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("a refused upload left an object: %v", err)
		}
		if status := send(t, put, data(1, 10), 10, nil); status != http.StatusOK {
			t.Fatalf("the untouched URL: status %d", status)
		}

		// A URL is refused once past its expiry (X-Amz-Expires counts from
		// X-Amz-Date, in whole seconds).
		get, err := b.PresignGet(ctx, key, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if status := send(t, get, nil, 0, nil); status != http.StatusOK {
			t.Fatalf("GET before expiry: %d", status)
		}
		// Real time is the subject: the S3 server checks expiry by its
		// own clock.
		time.Sleep(time.Until(get.ExpiresAt.Add(1100 * time.Millisecond)))
		if status := send(t, get, nil, 0, nil); status != http.StatusForbidden {
			t.Fatalf("GET after expiry: %d, want 403", status)
		}
	})
}

// send makes the presigned request with plain net/http, with length bytes
// of body and the headers it names, overridden by extra, and returns the
// status.
func send(t *testing.T, r session.PresignedRequest, body io.Reader, length int64, extra map[string]string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), r.Method, r.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	req.ContentLength = length
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
