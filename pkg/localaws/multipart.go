package localaws

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/johannesboyne/gofakes3"
)

// diskMultipart serves S3's multipart upload calls with parts kept in files
// and the object streamed into the backend on completion. gofakes3 alone
// keeps every part in memory and joins them into one buffer, which would
// cost local mode twice an object's size in memory for each large upload.
// Every other request goes on to gofakes3.
type diskMultipart struct {
	next    http.Handler
	backend gofakes3.Backend
	dir     string

	mu      sync.Mutex
	uploads map[string]*upload
}

type upload struct {
	bucket, key string
	meta        map[string]string
	dir         string
	mu          sync.Mutex
	parts       map[int]part
}

type part struct {
	size int64
	etag string // quoted hex MD5, as S3 gives it
}

const s3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// maxPartBytes is S3's largest part.
const maxPartBytes = 5 << 30

func newDiskMultipart(next http.Handler, backend gofakes3.Backend, dir string) (*diskMultipart, error) {
	// Uploads do not outlive the server, so parts left by an earlier run
	// are garbage.
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("localaws: clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("localaws: multipart dir: %w", err)
	}
	return &diskMultipart{next: next, backend: backend, dir: dir, uploads: map[string]*upload{}}, nil
}

func (d *diskMultipart) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	id := q.Get("uploadId")
	_, initiate := q["uploads"]
	var err error
	switch {
	case id != "" && r.Method == http.MethodPut:
		err = d.putPart(w, r, id, q.Get("partNumber"))
	case id != "" && r.Method == http.MethodPost:
		err = d.complete(w, r, id)
	case id != "" && r.Method == http.MethodDelete:
		err = d.abort(w, id)
	case id != "":
		err = s3Error{http.StatusNotImplemented, "NotImplemented", "only put, complete and abort are supported on uploads"}
	case initiate && r.Method == http.MethodPost && key != "":
		err = d.initiate(w, r, bucket, key)
	default:
		d.next.ServeHTTP(w, r)
		return
	}
	if err != nil {
		writeS3Error(w, err)
	}
}

func (d *diskMultipart) initiate(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	if ok, err := d.backend.BucketExists(bucket); err != nil || !ok {
		return s3Error{http.StatusNotFound, "NoSuchBucket", "the bucket does not exist"}
	}
	id := rand.Text()
	u := &upload{bucket: bucket, key: key, meta: objectMeta(r.Header), dir: filepath.Join(d.dir, id), parts: map[int]part{}}
	if err := os.Mkdir(u.dir, 0o700); err != nil {
		return err
	}
	d.mu.Lock()
	d.uploads[id] = u
	d.mu.Unlock()
	return writeXML(w, struct {
		XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
		NS       string   `xml:"xmlns,attr"`
		Bucket   string
		Key      string
		UploadID string `xml:"UploadId"`
	}{NS: s3Namespace, Bucket: bucket, Key: key, UploadID: id})
}

// objectMeta keeps the headers gofakes3 stores with an object.
func objectMeta(h http.Header) map[string]string {
	meta := map[string]string{}
	for name, values := range h {
		if strings.HasPrefix(name, "X-Amz-Meta-") || name == "Content-Type" ||
			name == "Content-Disposition" || name == "Content-Encoding" {
			meta[name] = values[0]
		}
	}
	return meta
}

func (d *diskMultipart) lookup(id string) (*upload, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.uploads[id]
	if !ok {
		return nil, s3Error{http.StatusNotFound, "NoSuchUpload", "the upload does not exist"}
	}
	return u, nil
}

func (d *diskMultipart) putPart(w http.ResponseWriter, r *http.Request, id, number string) error {
	u, err := d.lookup(id)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(number)
	if err != nil || n < 1 || n > 10000 {
		return s3Error{http.StatusBadRequest, "InvalidArgument", "partNumber must be 1 to 10000"}
	}
	if r.Header.Get("X-Amz-Copy-Source") != "" || r.Header.Get("X-Amz-Decoded-Content-Length") != "" {
		return s3Error{http.StatusNotImplemented, "NotImplemented", "copied and aws-chunked parts are not supported"}
	}
	if r.ContentLength < 0 || r.ContentLength > maxPartBytes {
		return s3Error{http.StatusBadRequest, "MissingContentLength", "parts need a Content-Length up to 5 GiB"}
	}
	p, err := u.writePart(n, r.Body, r.ContentLength)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", p.etag)
	return nil
}

// writePart streams a part into its file, replacing an earlier upload of
// the same number only once the new one is complete.
func (u *upload) writePart(n int, body io.Reader, size int64) (part, error) {
	f, err := os.CreateTemp(u.dir, "incoming-*")
	if err != nil {
		return part{}, err
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	h := md5.New()
	written, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return part{}, err
	}
	if written != size {
		return part{}, s3Error{http.StatusBadRequest, "IncompleteBody", "the part is shorter than its Content-Length"}
	}
	p := part{size: size, etag: `"` + hex.EncodeToString(h.Sum(nil)) + `"`}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := os.Rename(f.Name(), u.partPath(n)); err != nil {
		return part{}, err
	}
	u.parts[n] = p
	return p, nil
}

func (u *upload) partPath(n int) string { return filepath.Join(u.dir, fmt.Sprintf("part-%05d", n)) }

func (d *diskMultipart) abort(w http.ResponseWriter, id string) error {
	u, err := d.remove(id)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(u.dir); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (d *diskMultipart) remove(id string) (*upload, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.uploads[id]
	if !ok {
		return nil, s3Error{http.StatusNotFound, "NoSuchUpload", "the upload does not exist"}
	}
	delete(d.uploads, id)
	return u, nil
}

type s3Error struct {
	status        int
	code, message string
}

func (e s3Error) Error() string { return e.code + ": " + e.message }

func writeS3Error(w http.ResponseWriter, err error) {
	var se s3Error
	if !errors.As(err, &se) {
		se = s3Error{http.StatusInternalServerError, "InternalError", err.Error()}
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(se.status)
	_ = xml.NewEncoder(w).Encode(struct {
		XMLName xml.Name `xml:"Error"`
		Code    string
		Message string
	}{Code: se.code, Message: se.message})
}

func writeXML(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/xml")
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	return xml.NewEncoder(w).Encode(v)
}
