package localaws

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/johannesboyne/gofakes3"
	"github.com/spf13/afero"
)

// stagingDir is where objects are written before they are renamed into
// place. S3 bucket names cannot start with a dot, so the backend never
// lists it as a bucket.
const stagingDir = ".incoming"

// atomicFs is the OS file system with every truncating write (an object,
// its metadata) made in a file under staging and renamed over its name when
// it is closed, so a reader sees the old content or the new, never part of
// it, and a failed write leaves the old file as it was. staging is on the
// same file system as the objects, so the rename is atomic.
type atomicFs struct {
	afero.Fs
	staging string

	mu       sync.Mutex
	prepared map[string]string // object name → staged file holding its whole body
}

func newAtomicFs(root string) (*atomicFs, error) {
	staging := filepath.Join(root, stagingDir)
	// A write is never resumed, so whatever an earlier run left here (it
	// was stopped mid-upload) is garbage.
	if err := os.RemoveAll(staging); err != nil {
		return nil, fmt.Errorf("localaws: clear %s: %w", staging, err)
	}
	if err := os.MkdirAll(staging, 0o700); err != nil {
		return nil, fmt.Errorf("localaws: staging dir: %w", err)
	}
	return &atomicFs{Fs: afero.NewOsFs(), staging: staging, prepared: map[string]string{}}, nil
}

// Create stages the file; see atomicFs.
func (a *atomicFs) Create(name string) (afero.File, error) {
	return a.stage(name)
}

// OpenFile stages writes that replace the whole file and passes every other
// open on.
func (a *atomicFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	const replace = os.O_CREATE | os.O_TRUNC | os.O_WRONLY
	if flag&replace == replace && flag&(os.O_APPEND|os.O_EXCL) == 0 {
		return a.stage(name)
	}
	return a.Fs.OpenFile(name, flag, perm)
}

func (a *atomicFs) stage(name string) (afero.File, error) {
	// The errors a direct create would give (a directory in the way, a
	// missing parent) come before any byte is written.
	if info, err := os.Stat(name); err == nil && info.IsDir() {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	if _, err := os.Stat(filepath.Dir(name)); err != nil {
		return nil, err
	}
	a.mu.Lock()
	body, ok := a.prepared[name]
	delete(a.prepared, name)
	a.mu.Unlock()
	if ok {
		return &preparedFile{stagedFile: stagedFile{name: name}, body: body}, nil
	}
	f, err := os.CreateTemp(a.staging, "put-*")
	if err != nil {
		return nil, err
	}
	return &stagedFile{File: f, name: name}, nil
}

// prepare makes the next write of name take the staged file body as its
// content instead of what is written to it.
func (a *atomicFs) prepare(name, body string) {
	a.mu.Lock()
	a.prepared[name] = body
	a.mu.Unlock()
}

// unprepare forgets a body that no write took.
func (a *atomicFs) unprepare(name, body string) {
	a.mu.Lock()
	if a.prepared[name] == body {
		delete(a.prepared, name)
	}
	a.mu.Unlock()
}

// stagedFile is a file being written under staging; Close renames it to
// name, or removes it if a write failed.
type stagedFile struct {
	*os.File
	name     string
	writeErr error
	done     bool
}

func (f *stagedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if err != nil && f.writeErr == nil {
		f.writeErr = err
	}
	return n, err
}

func (f *stagedFile) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

// ReadFrom hides *os.File's, which would bypass Write and its error record.
func (f *stagedFile) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{f}, r)
}

// Name is the name the file is written for, not its staging name.
func (f *stagedFile) Name() string { return f.name }

func (f *stagedFile) Close() error {
	if f.done {
		return os.ErrClosed
	}
	f.done = true
	tmp := f.File.Name()
	err := f.File.Close()
	if f.writeErr != nil {
		err = f.writeErr
	}
	if err == nil {
		err = os.Rename(tmp, f.name)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// preparedFile stands for an object whose body is already staged whole:
// the backend writes the body again to hash it, and what it writes is only
// counted; Close renames the staged body into place if all of it went
// through, and otherwise drops it.
type preparedFile struct {
	stagedFile
	body    string
	written int64
}

func (f *preparedFile) Write(p []byte) (int, error) {
	f.written += int64(len(p))
	return len(p), nil
}

func (f *preparedFile) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

func (f *preparedFile) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{f}, r)
}

func (f *preparedFile) Close() error {
	if f.done {
		return os.ErrClosed
	}
	f.done = true
	info, err := os.Stat(f.body)
	if err == nil && info.Size() != f.written {
		err = fmt.Errorf("store %s: %d of %d bytes went through", f.name, f.written, info.Size())
	}
	if err == nil {
		err = os.Rename(f.body, f.name)
	}
	if err != nil {
		_ = os.Remove(f.body)
	}
	return err
}

// errIncompleteBody is why an object whose body broke off is not stored.
var errIncompleteBody = s3Error{400, "IncompleteBody", "the request body ended before its declared length"}

// atomicBackend is the afero backend with each object's body received
// whole into a staged file before it replaces the object. Receiving it
// outside the backend, whose single lock every request takes, also keeps a
// slow uploader from holding up every other request.
type atomicBackend struct {
	gofakes3.Backend
	fs      *atomicFs
	buckets string // where the backend keeps bucket directories

	// put serializes the stores so one staged body at a time stands for
	// a name; the afero backend serializes them anyway.
	put sync.Mutex
}

// PutObject stores input as the object only if all size bytes arrive.
func (b *atomicBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	body, err := b.receive(input, size)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	defer os.Remove(body) // fails harmlessly once renamed into place
	f, err := os.Open(body)
	if err != nil {
		return gofakes3.PutObjectResult{}, fmt.Errorf("reopen the staged body: %w", err)
	}
	defer f.Close()
	name := filepath.Join(b.buckets, filepath.FromSlash(path.Join(bucket, key)))
	b.put.Lock()
	defer b.put.Unlock()
	b.fs.prepare(name, body)
	defer b.fs.unprepare(name, body)
	return b.Backend.PutObject(bucket, key, meta, f, size, cond)
}

// receive copies exactly size bytes of input into a new staged file.
func (b *atomicBackend) receive(input io.Reader, size int64) (string, error) {
	f, err := os.CreateTemp(b.fs.staging, "body-*")
	if err != nil {
		return "", fmt.Errorf("stage the object: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(input, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = errIncompleteBody
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
