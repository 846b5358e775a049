//lint:file-ignore SA1019 feature/s3/manager is deprecated in favour of feature/s3/transfermanager, which is still v0 (pre-1.0); manager stays until its successor is stable.

// Package blob is sessionbox's S3 adapter (session.Blobs): presigned URLs
// through which clients move large files straight to and from S3, and
// streaming reads and writes for the service itself, in constant memory.
package blob

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Presigned URL lifetimes. They are short on purpose: a URL is a bearer
// credential, and one signed with a Lambda role's temporary credentials dies
// with them anyway (a presigned URL stops working when the credentials that
// signed it expire, whatever its own expiry says).
const (
	DefaultExpiry = 5 * time.Minute
	MaxExpiry     = 15 * time.Minute
	// sigV4MaxExpiry is the longest lifetime SigV4 allows at all.
	sigV4MaxExpiry = 7 * 24 * time.Hour
)

// Streaming defaults: Put holds at most (Concurrency+1) parts in memory.
const (
	DefaultPartSize    = manager.MinUploadPartSize // 5 MiB, S3's minimum
	DefaultConcurrency = 2
)

// Object limits S3 imposes.
const (
	maxKeyBytes      = 1024
	maxSinglePutSize = 5 << 30 // a presigned PUT is one request
)

// Blobs is the S3 implementation of session.Blobs for one bucket.
type Blobs struct {
	client        *s3.Client
	presign       *s3.PresignClient
	uploader      *manager.Uploader
	bucket        string
	defaultExpiry time.Duration
	maxExpiry     time.Duration
	partSize      int64
	concurrency   int
}

var _ session.Blobs = (*Blobs)(nil)

// Option configures Blobs.
type Option func(*Blobs)

// WithExpiry sets the lifetime of presigned URLs when the caller asks for
// none (def) and the longest a caller may ask for (max). Longer requests are
// cut to max.
func WithExpiry(def, max time.Duration) Option {
	return func(b *Blobs) {
		if max > 0 {
			b.maxExpiry = min(max, sigV4MaxExpiry)
		}
		if def > 0 {
			b.defaultExpiry = def
		}
	}
}

// WithStreaming sets Put's part size (at least 5 MiB, S3's minimum) and how
// many parts are sent at once; memory use is about partSize*(concurrency+1).
func WithStreaming(partSize int64, concurrency int) Option {
	return func(b *Blobs) {
		if partSize > 0 {
			b.partSize = max(partSize, manager.MinUploadPartSize)
		}
		if concurrency > 0 {
			b.concurrency = concurrency
		}
	}
}

// New returns Blobs storing objects in bucket through client.
func New(client *s3.Client, bucket string, opts ...Option) *Blobs {
	b := &Blobs{
		client: client, bucket: bucket,
		defaultExpiry: DefaultExpiry, maxExpiry: MaxExpiry,
		partSize: DefaultPartSize, concurrency: DefaultConcurrency,
	}
	for _, o := range opts {
		o(b)
	}
	b.defaultExpiry = min(b.defaultExpiry, b.maxExpiry)
	b.presign = s3.NewPresignClient(client)
	// One uploader for every Put: it keeps its part buffers between
	// uploads, so steady-state Puts allocate little.
	b.uploader = manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = b.partSize
		u.Concurrency = b.concurrency
		// The uploader adds part checksums by default whatever the client
		// says; a client configured to checksum only when required (as
		// for the local stand-in) is obeyed here too.
		if client.Options().RequestChecksumCalculation == aws.RequestChecksumCalculationWhenRequired {
			u.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		}
	})
	return b
}
