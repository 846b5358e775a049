package session

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestInlineFiles(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{MaxInlineFileBytes: 8})
	ctx := context.Background()
	e, err := r.m.WriteFile(ctx, testKey, "dir/a.txt", strings.NewReader("12345678"))
	if err != nil || e.Path != "/home/user/dir/a.txt" || e.Size != 8 || e.Name != "a.txt" {
		t.Fatalf("write %+v %v", e, err)
	}
	rc, got, err := r.m.ReadFile(ctx, testKey, "/home/user/dir/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "12345678" || got.Size != 8 {
		t.Fatalf("read %q %+v", b, got)
	}
	if _, err := r.m.WriteFile(ctx, testKey, "big.txt", strings.NewReader("123456789")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("write over limit: %v", err)
	}
	// A file grown in the sandbox past the limit cannot be read inline.
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "write /home/user/big.txt 0123456789"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.m.ReadFile(ctx, testKey, "big.txt"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("read over limit: %v", err)
	}
	if _, _, err := r.m.ReadFile(ctx, testKey, "dir"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("read of a directory: %v", err)
	}
	if _, _, err := r.m.ReadFile(ctx, testKey, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read of a missing file: %v", err)
	}

	list, err := r.m.ListFiles(ctx, testKey, "", 2)
	if err != nil || len(list) != 2 {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := r.m.DeleteFile(ctx, testKey, "dir/a.txt"); err != nil {
		t.Fatal(err)
	}
	// As on E2B and the local runtime, the path is gone either way.
	if err := r.m.DeleteFile(ctx, testKey, "dir/a.txt"); err != nil {
		t.Fatalf("second delete: %v, want success", err)
	}
	for _, p := range []string{"/", "/home/user", ".", ""} {
		if err := r.m.DeleteFile(ctx, testKey, p); !errors.Is(err, ErrInvalid) {
			t.Fatalf("delete %q: %v", p, err)
		}
	}
	if _, err := r.m.ListFiles(ctx, testKey, "", 11); !errors.Is(err, ErrInvalid) {
		t.Fatalf("depth 11: %v", err)
	}
}

func TestWriteFileRetriedOnFreshSandbox(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	s := r.mustStart(t, ctx, testKey, StartOptions{})
	r.sbx.vanish(s.SandboxID)
	if _, err := r.m.WriteFile(ctx, testKey, "a.txt", strings.NewReader("data")); err != nil {
		t.Fatal(err)
	}
	cur := r.store.session(testKey)
	if b, ok := r.sbx.file(cur.SandboxID, "/home/user/a.txt"); !ok || string(b) != "data" {
		t.Fatalf("file on the fresh sandbox: %q %v", b, ok)
	}
}

func TestUploadImportDownload(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	ticket, err := r.m.UploadURL(ctx, testKey, "data/in.csv", 11, "")
	if err != nil {
		t.Fatal(err)
	}
	if !transferIDRE().MatchString(ticket.TransferID) || ticket.Request.Method != "PUT" ||
		ticket.Request.Headers["Content-Length"] != "11" || ticket.Request.Headers["Content-Type"] != "text/csv; charset=utf-8" {
		t.Fatalf("ticket %+v", ticket)
	}
	if _, err := r.m.Import(ctx, testKey, ticket.TransferID); !errors.Is(err, ErrConflict) {
		t.Fatalf("import before upload: %v", err)
	}
	r.blobs.set(uploadKey(ticket.TransferID), []byte("a,b\n1,2\n3,4"))

	other := testKey
	other.Principal = "mallory"
	if _, err := r.m.Import(ctx, other, ticket.TransferID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another principal's import: %v", err)
	}
	otherSession := testKey
	otherSession.SessionID = "chat-2"
	if _, err := r.m.Import(ctx, otherSession, ticket.TransferID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("import into another session: %v", err)
	}

	e, err := r.m.Import(ctx, testKey, ticket.TransferID)
	if err != nil || e.Path != "/home/user/data/in.csv" || e.Size != 11 {
		t.Fatalf("import %+v %v", e, err)
	}
	s := r.store.session(testKey)
	if b, _ := r.sbx.file(s.SandboxID, "/home/user/data/in.csv"); string(b) != "a,b\n1,2\n3,4" {
		t.Fatalf("file %q", b)
	}

	d, err := r.m.DownloadURL(ctx, testKey, "data/in.csv")
	if err != nil || d.SizeBytes != 11 || d.ExpiresAt != r.clock.Now().Add(r.m.cfg.TransferTTL) {
		t.Fatalf("download %+v %v", d, err)
	}
	key := strings.TrimPrefix(d.URL, "https://blobs.test/")
	if b, ok := r.blobs.object(key); !ok || string(b) != "a,b\n1,2\n3,4" {
		t.Fatalf("blob %q", b)
	}
	if _, err := r.m.DownloadURL(ctx, testKey, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("download of a missing file: %v", err)
	}
}

func TestImportChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		upload  string
		advance bool
		id      string
		kind    error
	}{
		{"size mismatch", "short", false, "", ErrInvalid},
		{"expired", "0123456789", true, "", ErrNotFound},
		{"malformed id", "0123456789", false, "../../etc", ErrInvalid},
		{"unknown id", "0123456789", false, strings.Repeat("ab", 24), ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Config{})
			ticket, err := r.m.UploadURL(ctx, testKey, "f.bin", 10, "application/octet-stream")
			if err != nil {
				t.Fatal(err)
			}
			r.blobs.set(uploadKey(ticket.TransferID), []byte(tt.upload))
			if tt.advance {
				r.clock.Advance(31 * 60e9)
			}
			id := ticket.TransferID
			if tt.id != "" {
				id = tt.id
			}
			if _, err := r.m.Import(ctx, testKey, id); !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
		})
	}
}

func TestUploadURLValidation(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{MaxTransferBytes: 100})
	ctx := context.Background()
	tests := []struct {
		path, ct string
		size     int64
		kind     error
	}{
		{"a", "", -1, ErrInvalid},
		{"a", "", 101, ErrTooLarge},
		{"", "", 1, ErrInvalid},
		{"a\x00b", "", 1, ErrInvalid},
		{"a", "text/plain\r\nX-Evil: 1", 1, ErrInvalid},
	}
	for _, tt := range tests {
		if _, err := r.m.UploadURL(ctx, testKey, tt.path, tt.size, tt.ct); !errors.Is(err, tt.kind) {
			t.Fatalf("%+v: err = %v", tt, err)
		}
	}
	if _, err := r.m.UploadURL(ctx, testKey, "empty", 0, "text/plain"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty file: %v", err)
	}
	if len(r.blobs.puts) != 0 {
		t.Fatalf("tickets stored for refused uploads: %v", r.blobs.puts)
	}
}

func TestFileReadsStartNoSandbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reads := []struct {
		name string
		call func(m *Manager) error
	}{
		{"list", func(m *Manager) error { _, err := m.ListFiles(ctx, testKey, "", 1); return err }},
		{"read", func(m *Manager) error { _, _, err := m.ReadFile(ctx, testKey, "a.txt"); return err }},
		{"delete", func(m *Manager) error { return m.DeleteFile(ctx, testKey, "a.txt") }},
		{"download", func(m *Manager) error { _, err := m.DownloadURL(ctx, testKey, "a.txt"); return err }},
	}
	sessions := []struct {
		name   string
		setup  func(t *testing.T, r *rig)
		detail string
	}{
		{"unknown session", func(t *testing.T, r *rig) {}, `session "chat-1" not found`},
		{"stopped session", func(t *testing.T, r *rig) {
			if _, err := r.m.WriteFile(ctx, testKey, "a.txt", strings.NewReader("x")); err != nil {
				t.Fatal(err)
			}
			if _, err := r.m.Stop(ctx, testKey); err != nil {
				t.Fatal(err)
			}
		}, "has no sandbox; run code or start it first"},
		{"sandbox gone", func(t *testing.T, r *rig) {
			s := r.mustStart(t, ctx, testKey, StartOptions{})
			r.sbx.vanish(s.SandboxID)
		}, "has no sandbox; run code or start it first"},
	}
	for _, st := range sessions {
		for _, rd := range reads {
			t.Run(st.name+"/"+rd.name, func(t *testing.T) {
				r := newRig(t, Config{})
				st.setup(t, r)
				creates := r.sbx.count("Create")
				err := rd.call(r.m)
				if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), st.detail) {
					t.Fatalf("err = %v, want not found: %s", err, st.detail)
				}
				if n := r.sbx.count("Create") - creates; n != 0 {
					t.Fatalf("a read started %d sandboxes", n)
				}
				if st.name == "unknown session" && r.store.session(testKey) != nil {
					t.Fatal("a read created a session record")
				}
			})
		}
	}
	t.Run("paused session is resumed", func(t *testing.T) {
		r := newRig(t, Config{})
		r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
		if _, err := r.m.WriteFile(ctx, testKey, "b.txt", strings.NewReader("y")); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(31 * time.Minute)
		if rep, err := r.m.Reap(ctx); err != nil || rep.Paused != 1 {
			t.Fatalf("%+v %v", rep, err)
		}
		list, err := r.m.ListFiles(ctx, testKey, "", 1)
		if err != nil || len(list) != 1 || list[0].Name != "b.txt" || r.sbx.count("Connect") != 1 || r.sbx.count("Create") != 1 {
			t.Fatalf("list %+v %v connects %d creates %d", list, err, r.sbx.count("Connect"), r.sbx.count("Create"))
		}
	})
}
