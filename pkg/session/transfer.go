package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"time"
)

// UploadTicket lets a client send a file's bytes straight to blob storage;
// Import then moves them into the sandbox.
type UploadTicket struct {
	TransferID string
	Request    PresignedRequest
}

// DownloadTicket lets a client fetch a sandbox file from blob storage.
type DownloadTicket struct {
	URL       string
	ExpiresAt time.Time
	SizeBytes int64
}

// A transfer id is 24 random bytes in hex: unguessable, and it names the
// blobs of the transfer. What it is bound to (tenant, principal, session,
// path, size) is kept in a small ticket object beside the upload, so the
// binding needs no secret shared between functions and no table schema;
// Import honours a ticket only for the caller it was issued to.
var transferIDRE = lazyRegexp(`^[0-9a-f]{48}$`)

func ticketKey(id string) string { return "transfers/" + id + "/ticket.json" }
func uploadKey(id string) string { return "transfers/" + id + "/data" }

// maxTicketBytes bounds the ticket object read back.
const maxTicketBytes = 64 << 10

type transferTicket struct {
	Tenant      string    `json:"tenant"`
	Principal   string    `json:"principal"`
	SessionID   string    `json:"sessionId"`
	Path        string    `json:"path"`
	Size        int64     `json:"size"`
	ContentType string    `json:"contentType"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// UploadURL issues a presigned PUT for exactly size bytes bound for path in
// the session's sandbox, and the transfer id to import them with.
func (m *Manager) UploadURL(ctx context.Context, key Key, p string, size int64, contentType string) (*UploadTicket, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	p, err := CleanPath(p)
	if err != nil {
		return nil, err
	}
	if size < 1 {
		// A zero length cannot be pinned in a presigned PUT; small files
		// go inline anyway.
		return nil, Errorf(ErrInvalid, "sizeBytes must be at least 1 (write empty files inline)")
	}
	if size > m.cfg.MaxTransferBytes {
		return nil, &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("sizeBytes is more than the limit of %d", m.cfg.MaxTransferBytes)}
	}
	if contentType == "" {
		contentType = mimeType(p)
	}
	if !contentTypeRE().MatchString(contentType) {
		return nil, Errorf(ErrInvalid, "contentType is not a valid media type")
	}
	if m.blobs == nil {
		return nil, Errorf(ErrUnavailable, "file transfers are not configured")
	}
	id := randomID(24)
	t := transferTicket{Tenant: key.Tenant, Principal: key.Principal, SessionID: key.SessionID,
		Path: p, Size: size, ContentType: contentType, ExpiresAt: m.clock.Now().Add(m.cfg.TransferTTL)}
	body, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode transfer ticket: %w", err)
	}
	if err := m.blobs.Put(ctx, ticketKey(id), bytes.NewReader(body), int64(len(body)), "application/json"); err != nil {
		return nil, fmt.Errorf("store transfer ticket: %w", err)
	}
	req, err := m.blobs.PresignPut(ctx, uploadKey(id), size, contentType, m.cfg.TransferTTL)
	if err != nil {
		return nil, fmt.Errorf("presign upload: %w", err)
	}
	return &UploadTicket{TransferID: id, Request: req}, nil
}

// Import streams an uploaded file into the sandbox at the path its ticket
// names, in constant memory, and checks it arrived whole.
func (m *Manager) Import(ctx context.Context, key Key, transferID string) (FileEntry, error) {
	if err := validateKey(key); err != nil {
		return FileEntry{}, err
	}
	if m.blobs == nil {
		return FileEntry{}, Errorf(ErrUnavailable, "file transfers are not configured")
	}
	t, err := m.readTicket(ctx, key, transferID)
	if err != nil {
		return FileEntry{}, err
	}
	var entry FileEntry
	_, err = m.withSandbox(ctx, key, nil, func(ctx context.Context, s *Session) (bool, error) {
		e, err := m.importInto(ctx, s.SandboxID, transferID, t)
		entry = e
		return true, err
	})
	return entry, err
}

// readTicket loads the ticket of a transfer issued to key. Another caller's
// transfer reads as not found, so ids cannot be probed.
func (m *Manager) readTicket(ctx context.Context, key Key, id string) (transferTicket, error) {
	var t transferTicket
	if !transferIDRE().MatchString(id) {
		return t, Errorf(ErrInvalid, "transferId is malformed")
	}
	body, _, err := m.blobs.Open(ctx, ticketKey(id))
	if errors.Is(err, ErrNotFound) {
		return t, Errorf(ErrNotFound, "no transfer %s", id)
	} else if err != nil {
		return t, fmt.Errorf("read transfer ticket: %w", err)
	}
	defer body.Close()
	if err := json.NewDecoder(io.LimitReader(body, maxTicketBytes)).Decode(&t); err != nil {
		return t, fmt.Errorf("decode transfer ticket %s: %w", id, err)
	}
	if t.Tenant != key.Tenant || t.Principal != key.Principal || t.SessionID != key.SessionID {
		return transferTicket{}, Errorf(ErrNotFound, "no transfer %s", id)
	}
	// The upload had to happen within the TTL; the import may follow a
	// little later.
	if m.clock.Now().After(t.ExpiresAt.Add(m.cfg.TransferTTL)) {
		return transferTicket{}, Errorf(ErrNotFound, "transfer %s has expired", id)
	}
	return t, nil
}

// importInto copies the uploaded object into the sandbox; a short or long
// object is refused and a partial file removed.
func (m *Manager) importInto(ctx context.Context, sandbox, id string, t transferTicket) (FileEntry, error) {
	body, size, err := m.blobs.Open(ctx, uploadKey(id))
	if errors.Is(err, ErrNotFound) {
		return FileEntry{}, Errorf(ErrConflict, "nothing has been uploaded for transfer %s yet", id)
	} else if err != nil {
		return FileEntry{}, fmt.Errorf("open upload: %w", err)
	}
	defer body.Close()
	if size != t.Size {
		return FileEntry{}, Errorf(ErrInvalid, "the upload is %d bytes, the transfer was for %d", size, t.Size)
	}
	cr := &countingReader{r: io.LimitReader(body, t.Size+1)}
	if err := m.sandboxes.WriteFile(ctx, sandbox, t.Path, cr); err != nil {
		return FileEntry{}, fmt.Errorf("write %s: %w", t.Path, err)
	}
	if cr.n != t.Size {
		if rerr := m.sandboxes.RemoveFile(ctx, sandbox, t.Path); rerr != nil {
			m.log.WarnContext(ctx, "remove partial import", "path", t.Path, "err", rerr)
		}
		return FileEntry{}, Errorf(ErrInvalid, "the upload streamed %d bytes, the transfer was for %d", cr.n, t.Size)
	}
	return FileEntry{Name: path.Base(t.Path), Path: t.Path, Type: "file", Size: t.Size, ModifiedAt: m.clock.Now()}, nil
}

// DownloadURL copies a sandbox file to blob storage, streaming, and
// presigns a GET of it. It starts no sandbox: a session without one is
// ErrNotFound.
func (m *Manager) DownloadURL(ctx context.Context, key Key, p string) (*DownloadTicket, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	p, err := CleanPath(p)
	if err != nil {
		return nil, err
	}
	if m.blobs == nil {
		return nil, Errorf(ErrUnavailable, "file transfers are not configured")
	}
	var out *DownloadTicket
	err = m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
		e, err := m.statFile(ctx, s.SandboxID, p)
		if err != nil {
			return true, err
		}
		blobKey := "downloads/" + randomID(16) + "/" + path.Base(p)
		n, err := m.copyToBlob(ctx, s.SandboxID, p, blobKey, e.Size, mimeType(p))
		if err != nil {
			return true, err
		}
		get, err := m.blobs.PresignGet(ctx, blobKey, m.cfg.TransferTTL)
		if err != nil {
			return false, fmt.Errorf("presign download: %w", err)
		}
		out = &DownloadTicket{URL: get.URL, ExpiresAt: get.ExpiresAt, SizeBytes: n}
		return false, nil
	})
	return out, err
}

// copyToBlob streams a sandbox file to blob storage and returns its length.
// A file that changed size while being read is stored as read.
func (m *Manager) copyToBlob(ctx context.Context, sandbox, p, blobKey string, size int64, contentType string) (int64, error) {
	rc, err := m.sandboxes.ReadFile(ctx, sandbox, p)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	defer rc.Close()
	cr := &countingReader{r: rc}
	if err := m.blobs.Put(ctx, blobKey, cr, -1, contentType); err != nil {
		return 0, fmt.Errorf("store %s: %w", p, err)
	}
	if cr.n != size {
		m.log.InfoContext(ctx, "file changed size while copied", "path", p, "stat", size, "copied", cr.n)
	}
	return cr.n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
