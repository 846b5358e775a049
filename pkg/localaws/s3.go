package localaws

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/spf13/afero"
)

// StartS3 serves gofakes3's S3-compatible API on a free 127.0.0.1 port,
// keeping buckets and objects as files under dir (objects, multipart parts
// included, stream to and from disk; an object replaces the old one only
// once its whole body is written, so a broken-off upload leaves no part of
// itself). Presigned URLs made by a client from S3Client point at the same
// port, so they work from this machine, browsers included (CORS). Every
// other request must be signed with the stand-in's credentials: random ones
// made at the first start in dir (S3Credentials) unless WithS3Credentials
// names others. The stand-in verifies SigV4 as S3 does and answers 403
// otherwise. S3Client signs with them for an endpoint served here. The
// stand-in takes back its last port when free, so presigned URLs outlive a
// restart.
func StartS3(ctx context.Context, dir string, opts ...S3Option) (endpoint string, stop func(), err error) {
	var cfg s3Config
	for _, o := range opts {
		o(&cfg)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("localaws: s3 data dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("localaws: s3 data dir: %w", err)
	}
	if cfg.creds.AccessKeyID == "" {
		if cfg.creds, err = S3Credentials(dir); err != nil {
			return "", nil, err
		}
	}
	fsys, err := newAtomicFs(dir)
	if err != nil {
		return "", nil, err
	}
	store, err := s3afero.MultiBucket(afero.NewBasePathFs(fsys, dir))
	if err != nil {
		return "", nil, fmt.Errorf("localaws: s3 backend in %s: %w", dir, err)
	}
	backend := &atomicBackend{Backend: store, fs: fsys, buckets: filepath.Join(dir, "buckets")}
	faker := gofakes3.New(backend, gofakes3.WithoutVersioning())
	h, err := newDiskMultipart(faker.Server(), backend, filepath.Join(dir, "multipart"))
	if err != nil {
		return "", nil, err
	}
	var inner http.Handler = h
	if cfg.spaceCheck != nil {
		inner = spaceGuard(h, cfg.spaceCheck)
	}
	endpoint, stopServer, err := serve(ctx, "s3", filepath.Join(dir, "port"), newSigV4(inner, cfg.creds, time.Now), nil)
	if err != nil {
		return "", nil, err
	}
	endpoints.Store(endpoint, cfg.creds)
	return endpoint, func() { stopServer(); endpoints.Delete(endpoint) }, nil
}

// S3Option configures StartS3.
type S3Option func(*s3Config)

type s3Config struct {
	creds      aws.Credentials
	spaceCheck func() error
}

// WithSpaceCheck refuses uploads (PUT and POST) with 507 while check
// fails, so a full disk refuses new objects instead of keeping part of one.
func WithSpaceCheck(check func() error) S3Option {
	return func(c *s3Config) { c.spaceCheck = check }
}

func spaceGuard(next http.Handler, check func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut || r.Method == http.MethodPost {
			if err := check(); err != nil {
				w.Header().Set("Connection", "close")
				writeS3Error(w, s3Error{http.StatusInsufficientStorage, "InsufficientStorage", err.Error()})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// WithS3Credentials makes the stand-in accept requests signed with these
// credentials instead of the ones kept in its data dir, for clients
// configured as in production (an access key from the environment).
func WithS3Credentials(accessKeyID, secretAccessKey string) S3Option {
	return func(c *s3Config) {
		c.creds = aws.Credentials{AccessKeyID: accessKeyID, SecretAccessKey: secretAccessKey}
	}
}

// S3Client returns an SDK client for a local endpoint: path-style
// addressing (no bucket subdomains on 127.0.0.1), the credentials of the
// stand-in StartS3 serves there (none for another endpoint: set them with
// optFns), and checksums only where S3 requires them, since the stand-in does not
// speak the newer trailing-checksum encodings.
func S3Client(endpoint string, optFns ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region:                     Region,
		BaseEndpoint:               aws.String(endpoint),
		UsePathStyle:               true,
		Credentials:                credentialsFor(endpoint),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}, optFns...)
}

// EnsureBucket creates bucket unless it exists already.
func EnsureBucket(ctx context.Context, client *s3.Client, bucket string) error {
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	if _, ok := errors.AsType[*types.BucketAlreadyOwnedByYou](err); ok {
		return nil
	}
	if _, ok := errors.AsType[*types.BucketAlreadyExists](err); ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("localaws: create bucket %s: %w", bucket, err)
	}
	return nil
}
