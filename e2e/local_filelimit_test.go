package e2e

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestFileSizeLimitNamed: a write past the sandbox's per-file size limit
// (RLIMIT_FSIZE) is ErrTooLarge (413) naming that limit, not "the disk is
// full" while the disk has room.
func TestFileSizeLimitNamed(t *testing.T) {
	t.Parallel()
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice}, MinFreeBytes: -1,
		Runtime: e2blocal.Config{MaxFileBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	key := session.Key{Tenant: "local", Principal: "alice", SessionID: "big"}
	if _, err := svc.Manager.WriteFile(t.Context(), key, "/home/user/small.bin", bytes.NewReader(make([]byte, 1000))); err != nil {
		t.Fatalf("write under the limit: %v", err)
	}
	_, err = svc.Manager.WriteFile(t.Context(), key, "/home/user/big.bin", bytes.NewReader(make([]byte, 2<<20)))
	var e *session.Error
	if !errors.As(err, &e) || e.Kind != session.ErrTooLarge || !strings.Contains(e.Detail, "per-file size limit of 1 MiB") {
		t.Fatalf("write past the limit: %v, want ErrTooLarge naming the per-file size limit of 1 MiB", err)
	}
}
