//lint:file-ignore SA1019 feature/s3/manager is deprecated in favour of feature/s3/transfermanager, which is still v0 (pre-1.0); manager stays until its successor is stable.

package blob

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Open streams an object; ErrNotFound when it does not exist. The caller
// closes body.
func (b *Blobs) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if err := validKey(key); err != nil {
		return nil, 0, err
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, 0, wrapErr("open "+key, err)
	}
	size := int64(-1)
	if out.ContentLength != nil {
		size = *out.ContentLength
	}
	return out.Body, size, nil
}

// Put streams r to key. Objects up to one part go up in one request, larger
// ones as a multipart upload with a bounded number of parts in memory. When
// size is known (not -1), a body of any other length fails the upload and
// leaves nothing behind.
func (b *Blobs) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := validKey(key); err != nil {
		return err
	}
	in := &s3.PutObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key), Body: r}
	if size >= 0 {
		in.Body = &exactReader{r: r, left: size}
	}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	if _, err := b.uploader.Upload(ctx, in, partsFor(size)); err != nil {
		if errors.Is(err, errLength) {
			return &session.Error{Kind: session.ErrInvalid, Detail: "blob: put " + key, Err: err}
		}
		return wrapErr("put "+key, err)
	}
	return nil
}

// partsFor grows the part size for objects so large that the configured
// one would need more parts than S3 allows; the uploader cannot work this
// out itself from a stream.
func partsFor(size int64) func(*manager.Uploader) {
	return func(u *manager.Uploader) {
		if need := size/int64(manager.MaxUploadParts) + 1; need > u.PartSize {
			u.PartSize = need
		}
	}
}

// Delete removes key; deleting a missing object is not an error.
func (b *Blobs) Delete(ctx context.Context, key string) error {
	if err := validKey(key); err != nil {
		return err
	}
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	return wrapErr("delete "+key, err)
}

var errLength = errors.New("body length differs from the declared size")

// exactReader passes r through, failing when it ends before left bytes or
// holds more. It hides r's other methods on purpose: the uploader must
// stream it rather than seek.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left == 0 {
		var one [1]byte
		if n, _ := io.ReadFull(e.r, one[:]); n > 0 {
			return 0, fmt.Errorf("%w: more than declared", errLength)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if errors.Is(err, io.EOF) && e.left > 0 {
		return n, fmt.Errorf("%w: %d bytes short", errLength, e.left)
	}
	if errors.Is(err, io.EOF) {
		err = nil // the next Read checks for extra bytes
	}
	return n, err
}
