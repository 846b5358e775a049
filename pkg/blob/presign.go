package blob

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// PresignPut lets a client upload exactly size bytes to key with one PUT.
// The size is signed (content-length is a signed header), so S3 refuses a
// body of any other length; so is the content type when given.
func (b *Blobs) PresignPut(ctx context.Context, key string, size int64, contentType string, ttl time.Duration) (session.PresignedRequest, error) {
	if err := validKey(key); err != nil {
		return session.PresignedRequest{}, err
	}
	if size <= 0 {
		// The SDK does not sign a zero Content-Length, and an unsigned
		// length would let the URL take any body: empty files go inline.
		return session.PresignedRequest{}, session.Errorf(session.ErrInvalid, "blob: a presigned upload needs a size of at least 1 byte, got %d", size)
	}
	if size > maxSinglePutSize {
		return session.PresignedRequest{}, session.Errorf(session.ErrTooLarge, "blob: %d bytes exceed the %d-byte limit of one upload", size, int64(maxSinglePutSize))
	}
	in := &s3.PutObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key), ContentLength: aws.Int64(size)}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	expiry, err := b.expiry(ttl)
	if err != nil {
		return session.PresignedRequest{}, err
	}
	req, err := b.presign.PresignPutObject(ctx, in, s3.WithPresignExpires(expiry))
	if err != nil {
		return session.PresignedRequest{}, wrapErr("presign put "+key, err)
	}
	return presigned(req)
}

// PresignGet lets a client download key.
func (b *Blobs) PresignGet(ctx context.Context, key string, ttl time.Duration) (session.PresignedRequest, error) {
	if err := validKey(key); err != nil {
		return session.PresignedRequest{}, err
	}
	expiry, err := b.expiry(ttl)
	if err != nil {
		return session.PresignedRequest{}, err
	}
	req, err := b.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)}, s3.WithPresignExpires(expiry))
	if err != nil {
		return session.PresignedRequest{}, wrapErr("presign get "+key, err)
	}
	return presigned(req)
}

// expiry picks a URL lifetime: the default for none, at most the maximum.
func (b *Blobs) expiry(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl < 0:
		return 0, session.Errorf(session.ErrInvalid, "blob: negative URL lifetime %v", ttl)
	case ttl == 0:
		return b.defaultExpiry, nil
	}
	// SigV4 counts whole seconds; never round a short lifetime to zero.
	return max(min(ttl, b.maxExpiry), time.Second), nil
}

// presigned converts the SDK's answer, taking the expiry from the URL
// itself (signing time plus lifetime), so it is exactly what S3 enforces.
func presigned(req *v4.PresignedHTTPRequest) (session.PresignedRequest, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return session.PresignedRequest{}, fmt.Errorf("blob: presigned URL: %w", err)
	}
	q := u.Query()
	signed, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return session.PresignedRequest{}, fmt.Errorf("blob: presigned URL date: %w", err)
	}
	secs, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil {
		return session.PresignedRequest{}, fmt.Errorf("blob: presigned URL lifetime: %w", err)
	}
	headers := map[string]string{}
	for name, values := range req.SignedHeader {
		// The HTTP client sets Host from the URL.
		if http.CanonicalHeaderKey(name) != "Host" && len(values) > 0 {
			headers[http.CanonicalHeaderKey(name)] = values[0]
		}
	}
	return session.PresignedRequest{
		URL: req.URL, Method: req.Method, Headers: headers,
		ExpiresAt: signed.Add(time.Duration(secs) * time.Second),
	}, nil
}

func validKey(key string) error {
	if key == "" || len(key) > maxKeyBytes || !utf8.ValidString(key) {
		return session.Errorf(session.ErrInvalid, "blob: key must be 1 to %d bytes of UTF-8", maxKeyBytes)
	}
	return nil
}
