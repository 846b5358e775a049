package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A session's workspace is /home/user kept in blob storage, so its files
// outlive its sandbox (docs/architecture.md, "Workspaces"). Objects are
// content-addressed under the session's prefix; the manifest, written last
// in one PUT, names the files of the last good checkpoint, so a checkpoint
// cut off half way leaves the previous one whole.

// WorkspaceHome is the directory a workspace holds.
const WorkspaceHome = "/home/user"

// objectRefreshAge is how old an object may be and still be reused by a new
// checkpoint; older ones are uploaded again, so every object a manifest
// names outlives the manifest's retention under the bucket's age-based
// expiry (which runs WorkspaceRetention plus this age).
const objectRefreshAge = 7 * 24 * time.Hour

// WorkspaceExpiryMargin is what the bucket's lifecycle rule for workspaces
// adds to WorkspaceRetention: objects are reused for at most this long.
const WorkspaceExpiryMargin = objectRefreshAge

// CheckpointInfo describes one checkpoint of a session's workspace.
type CheckpointInfo struct {
	At    time.Time `json:"at"`
	Files int       `json:"files"`
	Bytes int64     `json:"bytes"`
}

// RestoreInfo says what a fresh sandbox got back from the workspace.
type RestoreInfo struct {
	Files        int       `json:"files"`
	Bytes        int64     `json:"bytes"`
	CheckpointAt time.Time `json:"checkpointAt"`
}

// manifest is the index of one checkpoint.
type manifest struct {
	Version int             `json:"version"`
	At      time.Time       `json:"at"`
	Entries []manifestEntry `json:"entries"`
}

// manifestEntry is one file, directory or symlink below WorkspaceHome.
type manifestEntry struct {
	Path    string `json:"path"` // relative to WorkspaceHome
	Type    string `json:"type"` // "f", "d" or "l"
	Size    int64  `json:"size,omitempty"`
	Mode    uint32 `json:"mode"`
	MtimeNs int64  `json:"mtimeNs"`
	SHA256  string `json:"sha256,omitempty"`
	Target  string `json:"target,omitempty"` // a symlink's target
	// Stored is when the object was uploaded (Unix seconds).
	Stored int64 `json:"stored,omitempty"`
}

func (m *manifest) totals() (files int, bytes int64) {
	for _, e := range m.Entries {
		if e.Type == "f" {
			files++
			bytes += e.Size
		}
	}
	return files, bytes
}

// workspacePrefix is where the session's workspace lives in the bucket.
// Each part is escaped, so no tenant or principal reaches another's prefix.
func workspacePrefix(k Key) string {
	return "workspaces/" + url.PathEscape(k.Tenant) + "/" + url.PathEscape(k.Principal) + "/" + url.PathEscape(k.SessionID) + "/"
}

func manifestKey(k Key) string           { return workspacePrefix(k) + "manifest.json" }
func objectKey(k Key, sum string) string { return workspacePrefix(k) + "objects/" + sum }

// persists reports whether the session keeps a workspace.
func (m *Manager) persists(s *Session) bool {
	return !m.cfg.DisableWorkspaces && !s.NoPersist && m.blobs != nil
}

// walkScript lists WorkspaceHome as JSON lines, one entry each, into a file,
// hashing regular files. Hashes are cached in the sandbox by (size, mtime,
// ctime, inode), so a checkpoint after a small change reads only what
// changed. Caches are excluded; exit status 3 means the size cap was
// passed, 4 the entries cap. It runs isolated (helperArgv), and what it
// writes is checked as it is read (readListing): the sandbox's user can
// change anything in the sandbox, so the listing is only ever a claim.
const walkScript = `
import hashlib, json, os, stat, sys
root, out, cap, cache_path, max_entries = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
skip = {'.cache', '__pycache__'}
try:
    with open(cache_path) as f: cache = json.load(f)
except Exception:
    cache = {}
fresh, total, count = {}, 0, 0
def digest(p, st):
    k = '%d:%d:%d:%d' % (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    c = cache.get(p)
    if c and c[0] == k:
        fresh[p] = c
        return c[1]
    h = hashlib.sha256()
    with open(p, 'rb') as f:
        while True:
            b = f.read(1 << 20)
            if not b: break
            h.update(b)
    fresh[p] = [k, h.hexdigest()]
    return fresh[p][1]
with open(out, 'w') as o:
    for dp, dns, fns in os.walk(root):
        dns[:] = [d for d in dns if d not in skip]
        for n in sorted(dns + fns):
            p = os.path.join(dp, n)
            rel = os.path.relpath(p, root)
            try:
                rel.encode('utf-8')
                st = os.lstat(p)
            except (UnicodeEncodeError, OSError):
                continue
            e = {'path': rel, 'mode': stat.S_IMODE(st.st_mode), 'mtimeNs': st.st_mtime_ns}
            if stat.S_ISLNK(st.st_mode):
                e['type'], e['target'] = 'l', os.readlink(p)
            elif stat.S_ISDIR(st.st_mode):
                e['type'] = 'd'
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                if total > cap:
                    print(total); sys.exit(3)
                try:
                    e['sha256'] = digest(p, st)
                except OSError:
                    continue
                e['type'], e['size'] = 'f', st.st_size
            else:
                continue
            count += 1
            if count > max_entries:
                print(count); sys.exit(4)
            o.write(json.dumps(e) + '\n')
with open(cache_path, 'w') as f: json.dump(fresh, f)
`

// fixupScript gives restored entries their directories, symlinks, modes
// and times; files were written already.
const fixupScript = `
import json, os, sys
root = sys.argv[1]
with open(sys.argv[2]) as f: entries = json.load(f)
os.unlink(sys.argv[2])
for e in entries:
    p = os.path.join(root, e['path'])
    if e['type'] == 'd':
        os.makedirs(p, exist_ok=True)
    elif e['type'] == 'l':
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if os.path.lexists(p): os.unlink(p)
        os.symlink(e['target'], p)
for e in reversed(entries):
    p = os.path.join(root, e['path'])
    if e['type'] != 'l':
        os.chmod(p, e['mode'])
        os.utime(p, ns=(e['mtimeNs'], e['mtimeNs']))
`

// workspaceCommandTimeout bounds the walk and the fixup in the sandbox.
const workspaceCommandTimeout = 10 * time.Minute

// Files move between the sandbox and the bucket workspaceParallelism at
// once, round trips dominating for small ones; at most largeParallelism of
// them are large files, each of which holds up to one upload part (5 MiB)
// in memory, so memory stays bounded whatever the workspace.
const (
	workspaceParallelism = 8
	largeParallelism     = 4
	largeFile            = 1 << 20
)

// Checkpoint saves the session's workspace now. It needs a live sandbox:
// a paused one is resumed, a session without one is ErrNotFound.
func (m *Manager) Checkpoint(ctx context.Context, key Key) (CheckpointInfo, error) {
	if err := validateKey(key); err != nil {
		return CheckpointInfo{}, err
	}
	var out CheckpointInfo
	err := m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
		if !m.persists(s) {
			return false, Errorf(ErrConflict, "session %q keeps no workspace (persist is off)", key.SessionID)
		}
		info, err := m.checkpoint(ctx, s)
		out = info
		return false, err
	})
	return out, err
}

// checkpoint takes a checkpoint of s's sandbox and records it on the
// session. The previous manifest stays until the new one is complete.
func (m *Manager) checkpoint(ctx context.Context, s *Session) (CheckpointInfo, error) {
	info, err := m.takeCheckpoint(ctx, s)
	m.recordCheckpoint(ctx, s.Key, info, problemOf(err))
	if err != nil {
		return CheckpointInfo{}, err
	}
	s.LastCheckpoint = *info
	return *info, nil
}

// problemOf is what a session's status says about a failed checkpoint: the
// caps, and a listing the sandbox's user tampered with, are the user's to
// fix; other failures are retried and logged.
func problemOf(err error) string {
	if e, ok := errors.AsType[*Error](err); ok && (e.Kind == ErrLimit || e.Kind == ErrInvalid) {
		return e.Detail
	}
	return ""
}

// takeCheckpoint walks the workspace, uploads what changed and writes the
// manifest, without touching the session's record.
func (m *Manager) takeCheckpoint(ctx context.Context, s *Session) (*CheckpointInfo, error) {
	prev, err := m.readManifest(ctx, s.Key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	// The checkpoint is as of the walk's start: activity during the walk
	// comes after it, so the next one is due.
	now := m.clock.Now()
	entries, err := m.walkWorkspace(ctx, s)
	if err != nil {
		return nil, err
	}
	next := &manifest{Version: 1, At: now, Entries: entries}
	if err := m.uploadChanged(ctx, s, prev, next, now); err != nil {
		return nil, err
	}
	if err := m.writeManifest(ctx, s.Key, next); err != nil {
		return nil, err
	}
	files, bytes := next.totals()
	return &CheckpointInfo{At: now, Files: files, Bytes: bytes}, nil
}

// saveBefore checkpoints s, which our lease holds, before its sandbox is
// paused or killed, noting the outcome on s for the caller's next write.
func (m *Manager) saveBefore(ctx context.Context, s *Session, why string) {
	info, err := m.takeCheckpoint(ctx, s)
	s.CheckpointTriedAt = m.clock.Now()
	s.CheckpointProblem = problemOf(err)
	if err != nil {
		m.log.WarnContext(ctx, "checkpoint before "+why, "session", s.SessionID, "tenant", s.Tenant, "err", err)
		return
	}
	s.LastCheckpoint = *info
}

// checkpointIsDue reports whether the reaper should checkpoint s at now.
func (m *Manager) checkpointIsDue(s *Session, now time.Time) bool {
	due := m.checkpointDue(s)
	return !due.IsZero() && !now.Before(due)
}

// reapCheckpoint is the throttled checkpoint of a session in use, taken by
// the reaper off the request path.
func (m *Manager) reapCheckpoint(ctx context.Context, s *Session) (reapOutcome, error) {
	if _, err := m.checkpoint(ctx, s); err != nil {
		if errors.Is(err, ErrSandboxGone) {
			return reapNothing, nil // the next call replaces it
		}
		return reapFailed, fmt.Errorf("checkpoint: %w", err)
	}
	return reapNothing, nil
}

// Delete removes the session: its sandbox (no checkpoint first), its
// workspace and its record, which reads as gone at once and is deleted by
// the table's TTL.
func (m *Manager) Delete(ctx context.Context, key Key) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if _, err := m.Status(ctx, key); err != nil {
		return err
	}
	if _, err := m.stop(ctx, key, false); err != nil {
		return err
	}
	dctx, cancel := detach(ctx)
	defer cancel()
	for range maxTransitions {
		cur, err := m.store.GetSession(dctx, key)
		if err != nil {
			return fmt.Errorf("read session %q: %w", key.SessionID, err)
		}
		if cur.State.Live() {
			return &Error{Kind: ErrConflict, RetryAfter: time.Second, Detail: "the session was started again while it was being deleted; try again"}
		}
		s := *cur
		s.ExpiresAt = m.clock.Now()
		s.LastCheckpoint, s.CheckpointProblem, s.CheckpointTriedAt = CheckpointInfo{}, "", time.Time{}
		s.Deleted = true
		err = m.store.UpdateSession(dctx, &s)
		if errors.Is(err, ErrConflict) {
			continue
		} else if err != nil {
			return fmt.Errorf("delete session %q: %w", key.SessionID, err)
		}
		if m.blobs == nil {
			return nil
		}
		// The record no longer names the workspace, so nothing restores
		// it even if removing its objects fails half way.
		if err := m.deleteWorkspace(dctx, key); err != nil {
			return fmt.Errorf("delete the workspace of session %q: %w", key.SessionID, err)
		}
		return nil
	}
	return &Error{Kind: ErrConflict, Detail: "the session kept changing under concurrent calls; try again", RetryAfter: time.Second}
}

// cmpOr returns a unless it is nil, else b.
func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// walkWorkspace runs walkScript in the sandbox and reads its listing back,
// bounded (readListing).
func (m *Manager) walkWorkspace(ctx context.Context, s *Session) ([]manifestEntry, error) {
	list := "/tmp/.sessionbox-walk-" + randomID(8)
	res, err := m.runHelper(ctx, s.SandboxID, walkScript, WorkspaceHome, list,
		strconv.FormatInt(m.cfg.MaxWorkspaceBytes, 10), "/tmp/.sessionbox-hashes", strconv.Itoa(m.cfg.MaxWorkspaceEntries))
	if err != nil {
		return nil, fmt.Errorf("list the workspace of sandbox %s: %w", s.SandboxID, err)
	}
	defer m.removeQuietly(ctx, s.SandboxID, list)
	switch res.ExitCode {
	case 0:
	case 3:
		return nil, m.tooManyBytes()
	case 4:
		return nil, m.tooManyEntries()
	default:
		return nil, fmt.Errorf("list the workspace of sandbox %s: exit %d: %s", s.SandboxID, res.ExitCode, lastLine(res.Stderr))
	}
	r, err := m.sandboxes.ReadFile(ctx, s.SandboxID, list)
	if err != nil {
		return nil, fmt.Errorf("read the workspace listing: %w", err)
	}
	defer r.Close()
	return m.readListing(r)
}

func (m *Manager) removeQuietly(ctx context.Context, id, p string) {
	if err := m.sandboxes.RemoveFile(ctx, id, p); err != nil && !errors.Is(err, ErrNotFound) {
		m.log.DebugContext(ctx, "remove scratch file", "sandbox", id, "path", p, "err", err)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// uploadChanged uploads the files of next whose content the bucket lacks
// (or holds in an object old enough to expire soon). A file that changed
// while it was read keeps its previous entry, or is left out of this
// checkpoint; the next one takes it.
func (m *Manager) uploadChanged(ctx context.Context, s *Session, prev, next *manifest, now time.Time) error {
	stored := map[string]int64{}
	prevByPath := map[string]manifestEntry{}
	if prev != nil {
		for _, e := range prev.Entries {
			if e.Type == "f" && fresh(e, now) {
				stored[e.SHA256] = e.Stored
				prevByPath[e.Path] = e
			}
		}
	}
	var todo []*manifestEntry
	queued := map[string]bool{}
	for i := range next.Entries {
		e := &next.Entries[i]
		if at, ok := stored[e.SHA256]; e.Type != "f" || ok {
			e.Stored = at
			continue
		}
		if !queued[e.SHA256] {
			queued[e.SHA256] = true
			todo = append(todo, e)
		}
	}
	var mu sync.Mutex
	uploaded := map[string]bool{}
	large := make(chan struct{}, largeParallelism)
	err := parallelEach(ctx, len(todo), workspaceParallelism, func(ctx context.Context, j int) error {
		if todo[j].Size >= largeFile {
			select {
			case large <- struct{}{}:
				defer func() { <-large }()
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		ok, err := m.uploadFile(ctx, s, todo[j])
		mu.Lock()
		uploaded[todo[j].SHA256] = ok
		mu.Unlock()
		return err
	})
	if err != nil {
		return err
	}
	kept := next.Entries[:0]
	for _, e := range next.Entries {
		if e.Type == "f" && e.Stored == 0 {
			if !uploaded[e.SHA256] {
				if old, ok := prevByPath[e.Path]; ok {
					kept = append(kept, old)
				}
				continue
			}
			e.Stored = now.Unix()
		}
		kept = append(kept, e)
	}
	next.Entries = kept
	return nil
}

// fresh reports whether an entry's object is young enough to be reused.
func fresh(e manifestEntry, now time.Time) bool {
	return e.Stored > 0 && now.Sub(time.Unix(e.Stored, 0)) < objectRefreshAge
}

// uploadFile streams one file from the sandbox to its object. ok is false
// when the file no longer matches its listing (it changed meanwhile).
func (m *Manager) uploadFile(ctx context.Context, s *Session, e *manifestEntry) (ok bool, err error) {
	r, err := m.sandboxes.ReadFile(ctx, s.SandboxID, path.Join(WorkspaceHome, e.Path))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read %s from the sandbox: %w", e.Path, err)
	}
	defer r.Close()
	h := &countingHash{h: sha256.New()}
	body := io.TeeReader(io.LimitReader(r, e.Size), h)
	key := objectKey(s.Key, e.SHA256)
	perr := m.blobs.Put(ctx, key, body, e.Size, "application/octet-stream")
	if perr != nil {
		// A file that shrank fails the upload with a short body: read on
		// to tell it from a failing bucket.
		if _, err := io.Copy(io.Discard, body); err != nil || h.n == e.Size {
			return false, fmt.Errorf("upload %s: %w", e.Path, perr)
		}
	}
	if h.n != e.Size || hex.EncodeToString(h.h.Sum(nil)) != e.SHA256 {
		// Never leave an object whose name lies about its content.
		if derr := m.blobs.Delete(context.WithoutCancel(ctx), key); derr != nil {
			m.log.WarnContext(ctx, "delete a mismatched workspace object", "key", key, "err", derr)
		}
		return false, nil
	}
	return true, nil
}

type countingHash struct {
	h hash.Hash
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

// readManifest returns the session's last good manifest; ErrNotFound when
// it has none.
func (m *Manager) readManifest(ctx context.Context, k Key) (*manifest, error) {
	r, _, err := m.blobs.Open(ctx, manifestKey(k))
	if err != nil {
		return nil, fmt.Errorf("open the workspace manifest: %w", err)
	}
	defer r.Close()
	// Manifests are written by this service, within the listing's bounds;
	// one larger (written before they held) is refused, not loaded whole.
	var mf manifest
	lr := &io.LimitedReader{R: r, N: 2*m.maxListingBytes() + 1}
	if err := json.NewDecoder(lr).Decode(&mf); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("the workspace manifest is larger than %d bytes", 2*m.maxListingBytes())
		}
		return nil, fmt.Errorf("decode the workspace manifest: %w", err)
	}
	return &mf, nil
}

// writeManifest makes next the session's last good checkpoint: one PUT,
// which S3 applies whole or not at all.
func (m *Manager) writeManifest(ctx context.Context, k Key, next *manifest) error {
	data, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("encode the workspace manifest: %w", err)
	}
	if err := m.blobs.Put(ctx, manifestKey(k), strings.NewReader(string(data)), int64(len(data)), "application/json"); err != nil {
		return fmt.Errorf("write the workspace manifest: %w", err)
	}
	return nil
}

// recordCheckpoint notes a checkpoint (or why none could be taken) on the
// session's record, re-reading it when it changed meanwhile.
func (m *Manager) recordCheckpoint(ctx context.Context, k Key, info *CheckpointInfo, problem string) {
	dctx, cancel := detach(ctx)
	defer cancel()
	for range 5 {
		cur, err := m.store.GetSession(dctx, k)
		if err != nil {
			m.log.WarnContext(ctx, "read session to record a checkpoint", "session", k.SessionID, "err", err)
			return
		}
		if cur.Deleted {
			return // deleted meanwhile: its workspace must not come back
		}
		s := *cur
		s.CheckpointTriedAt = m.clock.Now()
		if info != nil {
			if !s.LastCheckpoint.At.Before(info.At) {
				return // a later checkpoint was recorded already
			}
			s.LastCheckpoint = *info
		}
		s.CheckpointProblem = problem
		if !s.State.Live() {
			s.ExpiresAt = m.stoppedExpiry(&s, m.clock.Now())
		}
		m.setDue(&s)
		err = m.store.UpdateSession(dctx, &s)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrConflict) {
			m.log.WarnContext(ctx, "record a checkpoint", "session", k.SessionID, "err", err)
			return
		}
	}
}

// restoreWorkspace brings the session's last checkpoint into the fresh
// sandbox id, before any call runs there. A session's first sandbox costs
// nothing here; a replacement costs one read of the manifest even when the
// record names no checkpoint, since a record may lag behind its workspace
// (a store restored from a snapshot, a write lost when the service died).
// A restore that fails fails the start: a sandbox running without its
// files would soon checkpoint over the good copy.
func (m *Manager) restoreWorkspace(ctx context.Context, s *Session, id string) (*RestoreInfo, error) {
	if !m.persists(s) || s.LastCheckpoint.At.IsZero() && s.SandboxID == "" {
		return nil, nil
	}
	mf, err := m.readManifest(ctx, s.Key)
	if errors.Is(err, ErrNotFound) {
		if !s.LastCheckpoint.At.IsZero() {
			m.log.WarnContext(ctx, "workspace manifest gone (expired?)", "session", s.SessionID)
		}
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var files []manifestEntry
	for _, e := range mf.Entries {
		if e.Type == "f" {
			files = append(files, e)
		}
	}
	err = parallelEach(ctx, len(files), workspaceParallelism, func(ctx context.Context, i int) error {
		return m.restoreFile(ctx, s.Key, id, files[i])
	})
	if err != nil {
		return nil, err
	}
	if err := m.fixupWorkspace(ctx, id, mf); err != nil {
		return nil, err
	}
	n, bytes := mf.totals()
	if m.restoredSitePackages(mf) && s.Type != TypeCustom {
		// The kernel started before the user's site-packages existed, so
		// Python left them off its path; a fresh kernel sees them.
		if err := m.sandboxes.ResetKernel(ctx, id); err != nil {
			return nil, fmt.Errorf("restart the kernel after a restore: %w", err)
		}
	}
	return &RestoreInfo{Files: n, Bytes: bytes, CheckpointAt: mf.At}, nil
}

func (m *Manager) restoredSitePackages(mf *manifest) bool {
	for _, e := range mf.Entries {
		if e.Type == "d" && strings.HasPrefix(e.Path, ".local/lib/python") && strings.HasSuffix(e.Path, "/site-packages") {
			return true
		}
	}
	return false
}

func (m *Manager) restoreFile(ctx context.Context, k Key, id string, e manifestEntry) error {
	r, _, err := m.blobs.Open(ctx, objectKey(k, e.SHA256))
	if err != nil {
		return fmt.Errorf("open the object of %s: %w", e.Path, err)
	}
	defer r.Close()
	if err := m.sandboxes.WriteFile(ctx, id, path.Join(WorkspaceHome, e.Path), r); err != nil {
		return fmt.Errorf("restore %s: %w", e.Path, err)
	}
	return nil
}

// fixupWorkspace runs fixupScript over the manifest's entries.
func (m *Manager) fixupWorkspace(ctx context.Context, id string, mf *manifest) error {
	data, err := json.Marshal(mf.Entries)
	if err != nil {
		return fmt.Errorf("encode the restore list: %w", err)
	}
	list := "/tmp/.sessionbox-restore-" + randomID(8)
	if err := m.sandboxes.WriteFile(ctx, id, list, strings.NewReader(string(data))); err != nil {
		return fmt.Errorf("write the restore list: %w", err)
	}
	res, err := m.runHelper(ctx, id, fixupScript, WorkspaceHome, list)
	if err != nil {
		return fmt.Errorf("restore modes and times: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("restore modes and times: exit %d: %s", res.ExitCode, lastLine(res.Stderr))
	}
	return nil
}

// deleteWorkspace removes the manifest first (the workspace is then gone
// for every reader), then the objects it named. Objects of checkpoints cut
// off half way are named by no manifest; the bucket's lifecycle expires
// them.
func (m *Manager) deleteWorkspace(ctx context.Context, k Key) error {
	mf, err := m.readManifest(ctx, k)
	if errors.Is(err, ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if err := m.blobs.Delete(ctx, manifestKey(k)); err != nil {
		return fmt.Errorf("delete the workspace manifest: %w", err)
	}
	seen := map[string]bool{}
	var keys []string
	for _, e := range mf.Entries {
		if e.Type == "f" && !seen[e.SHA256] {
			seen[e.SHA256] = true
			keys = append(keys, objectKey(k, e.SHA256))
		}
	}
	return parallelEach(ctx, len(keys), workspaceParallelism, func(ctx context.Context, i int) error {
		if err := m.blobs.Delete(ctx, keys[i]); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("delete workspace object: %w", err)
		}
		return nil
	})
}

// parallelEach runs fn for 0..n-1, at most par at once, and returns the
// first error; the others are cancelled by it.
func parallelEach(ctx context.Context, n, par int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return context.Cause(ctx)
}

// stoppedExpiry is when a stopped session's record may go: after the
// stopped retention, and never before its workspace expires.
func (m *Manager) stoppedExpiry(s *Session, now time.Time) time.Time {
	t := now.Add(m.cfg.StoppedRetention)
	if m.persists(s) && !s.LastCheckpoint.At.IsZero() {
		if w := s.LastCheckpoint.At.Add(m.cfg.WorkspaceRetention); w.After(t) {
			t = w
		}
	}
	return t
}

// checkpointDue is when a running session next needs a checkpoint: a
// CheckpointInterval after the last one, once activity came after it.
func (m *Manager) checkpointDue(s *Session) time.Time {
	if !m.persists(s) || s.State != StateRunning || !s.LastActivityAt.After(s.LastCheckpoint.At) {
		return time.Time{}
	}
	since := s.LastCheckpoint.At
	if since.IsZero() {
		since = s.CreatedAt
	}
	if s.CheckpointTriedAt.After(since) {
		since = s.CheckpointTriedAt
	}
	return since.Add(m.cfg.CheckpointInterval)
}

// setDue is setDue with the next throttled checkpoint taken into account.
func (m *Manager) setDue(s *Session) {
	setDue(s)
	if s.State == StateRunning {
		s.DueAt = earliest(s.DueAt, m.checkpointDue(s))
	}
}
