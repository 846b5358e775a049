package session

import (
	"context"
	"fmt"
	"mime"
	"path"
	"slices"
	"strings"
	"time"
)

// WorkDir is the sandbox's working directory: relative paths resolve in it
// and artifacts are looked for in it.
const WorkDir = "/home/user"

// artifactDepth is how deep below WorkDir artifacts are looked for.
const artifactDepth = 2

// artifactsOf returns the files in the working directory that the
// execution begun at start created or changed, each uploaded with a
// download URL. When the provider reported the changed files with res,
// that list is used; otherwise it costs one listing after the execution
// (none before): a file counts when its modified time is at or after the
// start, less the configured clock skew. Failures lose artifacts, never
// the result.
func (m *Manager) artifactsOf(ctx context.Context, s *Session, start time.Time, res *ExecResult) []Artifact {
	if m.blobs == nil || m.cfg.DisableArtifacts || m.cfg.MaxArtifacts == 0 {
		return nil
	}
	changed, ok := m.changedFiles(ctx, s, start, res)
	if !ok {
		return nil
	}
	slices.SortFunc(changed, func(a, b FileEntry) int { return strings.Compare(a.Path, b.Path) })
	if len(changed) > m.cfg.MaxArtifacts {
		m.log.InfoContext(ctx, "artifacts capped", "found", len(changed), "kept", m.cfg.MaxArtifacts)
		changed = changed[:m.cfg.MaxArtifacts]
	}
	var out []Artifact
	for _, e := range changed {
		a, err := m.uploadArtifact(ctx, s, e)
		if err != nil {
			m.log.WarnContext(ctx, "upload artifact", "sandbox", s.SandboxID, "path", e.Path, "err", err)
			continue
		}
		out = append(out, a)
	}
	return out
}

// changedFiles returns the candidate artifacts, filtered: from res when
// the provider reported them (it compared the files before and after, so
// no time filter applies), else from a listing. ok is false when the
// listing failed.
func (m *Manager) changedFiles(ctx context.Context, s *Session, start time.Time, res *ExecResult) (changed []FileEntry, ok bool) {
	keep := func(e FileEntry) bool {
		return e.Type == "file" && inWorkDir(e.Path) && !hidden(e.Path) && e.Size <= m.cfg.MaxArtifactBytes
	}
	if res != nil && res.ChangedFilesReported {
		for _, e := range res.ChangedFiles {
			if keep(e) {
				changed = append(changed, e)
			}
		}
		return changed, true
	}
	entries, err := m.sandboxes.ListFiles(ctx, s.SandboxID, WorkDir, artifactDepth)
	if err != nil {
		m.log.WarnContext(ctx, "list files for artifacts", "sandbox", s.SandboxID, "err", err)
		return nil, false
	}
	since := start.Add(-m.cfg.ArtifactClockSkew)
	for _, e := range entries {
		if keep(e) && !e.ModifiedAt.Before(since) {
			changed = append(changed, e)
		}
	}
	return changed, true
}

// inWorkDir reports whether p lies in WorkDir no deeper than artifactDepth.
func inWorkDir(p string) bool {
	rel, ok := strings.CutPrefix(p, WorkDir+"/")
	return ok && rel != "" && strings.Count(rel, "/") < artifactDepth
}

// uploadArtifact copies one file from the sandbox to blob storage and
// presigns a download of it.
func (m *Manager) uploadArtifact(ctx context.Context, s *Session, e FileEntry) (Artifact, error) {
	key := "artifacts/" + randomID(16) + "/" + path.Base(e.Path)
	ct := mimeType(e.Path)
	n, err := m.copyToBlob(ctx, s.SandboxID, e.Path, key, e.Size, ct)
	if err != nil {
		return Artifact{}, err
	}
	get, err := m.blobs.PresignGet(ctx, key, m.cfg.TransferTTL)
	if err != nil {
		return Artifact{}, fmt.Errorf("presign artifact download: %w", err)
	}
	return Artifact{Path: e.Path, SizeBytes: n, MimeType: ct, DownloadURL: get.URL}, nil
}

// hidden reports whether a path lies in or is a dot file or directory
// (.cache, .local, .ipython...): tool state, not results.
func hidden(p string) bool {
	rel := strings.TrimPrefix(p, WorkDir+"/")
	for part := range strings.SplitSeq(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

func mimeType(p string) string {
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}
