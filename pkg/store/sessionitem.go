package store

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// sessionRecord is a session as stored. DueShard and DueAt are set only
// while the session is live and has a deadline, which keeps the index sparse.
type sessionRecord struct {
	PK               string            `dynamodbav:"pk"`
	SK               string            `dynamodbav:"sk"`
	Tenant           string            `dynamodbav:"tenant"`
	Principal        string            `dynamodbav:"principal"`
	SessionID        string            `dynamodbav:"sessionId"`
	State            string            `dynamodbav:"state"`
	SandboxID        string            `dynamodbav:"sandboxId,omitempty"`
	Type             string            `dynamodbav:"type,omitempty"`
	Template         string            `dynamodbav:"template,omitempty"`
	Metadata         map[string]string `dynamodbav:"metadata,omitempty"`
	IdleTimeoutMs    int64             `dynamodbav:"idleTimeoutMs,omitempty"`
	PauseOnIdle      bool              `dynamodbav:"pauseOnIdle,omitempty"`
	CreatedAt        string            `dynamodbav:"createdAt,omitempty"`
	LastActivityAt   string            `dynamodbav:"lastActivityAt,omitempty"`
	IdleDeadline     string            `dynamodbav:"idleDeadline,omitempty"`
	LifetimeDeadline string            `dynamodbav:"lifetimeDeadline,omitempty"`
	LeaseOwner       string            `dynamodbav:"leaseOwner,omitempty"`
	LeaseUntil       string            `dynamodbav:"leaseUntil,omitempty"`
	Slot             string            `dynamodbav:"slot,omitempty"`
	DueTime          string            `dynamodbav:"dueTime,omitempty"`
	DueShard         string            `dynamodbav:"dueShard,omitempty"`
	DueAt            int64             `dynamodbav:"dueAt,omitempty"`
	ExpiresTime      string            `dynamodbav:"expiresTime,omitempty"`
	ExpiresAt        int64             `dynamodbav:"expiresAt,omitempty"`
	NoPersist        bool              `dynamodbav:"noPersist,omitempty"`
	CheckpointAt     string            `dynamodbav:"checkpointAt,omitempty"`
	CheckpointFiles  int               `dynamodbav:"checkpointFiles,omitempty"`
	CheckpointBytes  int64             `dynamodbav:"checkpointBytes,omitempty"`
	CheckpointTried  string            `dynamodbav:"checkpointTriedAt,omitempty"`
	CheckpointIssue  string            `dynamodbav:"checkpointProblem,omitempty"`
	RefreshIssue     string            `dynamodbav:"timeoutRefreshProblem,omitempty"`
	Deleted          bool              `dynamodbav:"deleted,omitempty"`
	SandboxStarted   string            `dynamodbav:"sandboxStartedAt,omitempty"`
	Contexts         []contextRecord   `dynamodbav:"contexts,omitempty"`
	Version          int64             `dynamodbav:"version"`
}

// contextRecord is one interpreter context of a session as stored.
type contextRecord struct {
	ID        string `dynamodbav:"id"`
	Language  string `dynamodbav:"language"`
	Cwd       string `dynamodbav:"cwd"`
	SandboxID string `dynamodbav:"sandboxId"`
	CreatedAt string `dynamodbav:"createdAt"`
}

func encodeContexts(cs []session.CodeContext) []contextRecord {
	if len(cs) == 0 {
		return nil
	}
	out := make([]contextRecord, len(cs))
	for i, c := range cs {
		out[i] = contextRecord{ID: c.ID, Language: c.Language, Cwd: c.Cwd, SandboxID: c.SandboxID, CreatedAt: fmtTime(c.CreatedAt)}
	}
	return out
}

func decodeContexts(p *timeParser, rs []contextRecord) []session.CodeContext {
	if len(rs) == 0 {
		return nil
	}
	out := make([]session.CodeContext, len(rs))
	for i, r := range rs {
		out[i] = session.CodeContext{ID: r.ID, Language: r.Language, Cwd: r.Cwd, SandboxID: r.SandboxID, CreatedAt: p.parse("contexts.createdAt", r.CreatedAt)}
	}
	return out
}

// dueShard spreads sessions over the index shards by a stable hash of the
// key, so a session stays on its shard across updates.
func dueShard(k session.Key, shards int) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s\x00%s\x00%s", k.Tenant, k.Principal, k.SessionID)
	return fmt.Sprintf("DUE#%d", h.Sum32()%uint32(shards))
}

func (s *Store) encodeSession(v *session.Session, version int64) (item, error) {
	r := sessionRecord{
		PK: sessionPK(v.Tenant, v.Principal), SK: sessionSK(v.SessionID),
		Tenant: v.Tenant, Principal: v.Principal, SessionID: v.SessionID,
		State: string(v.State), SandboxID: v.SandboxID, Type: string(v.Type),
		Template: v.Template, Metadata: v.Metadata,
		IdleTimeoutMs: v.IdleTimeout.Milliseconds(), PauseOnIdle: v.PauseOnIdle,
		CreatedAt: fmtTime(v.CreatedAt), LastActivityAt: fmtTime(v.LastActivityAt),
		IdleDeadline: fmtTime(v.IdleDeadline), LifetimeDeadline: fmtTime(v.LifetimeDeadline),
		LeaseOwner: v.LeaseOwner, LeaseUntil: fmtTime(v.LeaseUntil), Slot: v.Slot,
		DueTime:     fmtTime(v.DueAt),
		ExpiresTime: fmtTime(v.ExpiresAt), ExpiresAt: epochSeconds(v.ExpiresAt),
		NoPersist:    v.NoPersist,
		CheckpointAt: fmtTime(v.LastCheckpoint.At), CheckpointFiles: v.LastCheckpoint.Files,
		CheckpointBytes: v.LastCheckpoint.Bytes, CheckpointTried: fmtTime(v.CheckpointTriedAt),
		CheckpointIssue: v.CheckpointProblem, RefreshIssue: v.TimeoutRefreshProblem, Deleted: v.Deleted,
		SandboxStarted: fmtTime(v.SandboxStartedAt), Contexts: encodeContexts(v.Contexts),
		Version: version,
	}
	if v.State.Live() && !v.DueAt.IsZero() {
		r.DueShard = dueShard(v.Key, s.shards)
		r.DueAt = v.DueAt.Unix()
	}
	return marshal(r)
}

func decodeSession(m item) (*session.Session, error) {
	var r sessionRecord
	if err := unmarshal(m, &r); err != nil {
		return nil, err
	}
	var p timeParser
	v := &session.Session{
		Key:   session.Key{Tenant: r.Tenant, Principal: r.Principal, SessionID: r.SessionID},
		State: session.State(r.State), SandboxID: r.SandboxID, Type: session.SandboxType(r.Type),
		Template: r.Template, Metadata: r.Metadata,
		IdleTimeout: time.Duration(r.IdleTimeoutMs) * time.Millisecond, PauseOnIdle: r.PauseOnIdle,
		CreatedAt:        p.parse("createdAt", r.CreatedAt),
		LastActivityAt:   p.parse("lastActivityAt", r.LastActivityAt),
		IdleDeadline:     p.parse("idleDeadline", r.IdleDeadline),
		LifetimeDeadline: p.parse("lifetimeDeadline", r.LifetimeDeadline),
		LeaseOwner:       r.LeaseOwner,
		LeaseUntil:       p.parse("leaseUntil", r.LeaseUntil),
		Slot:             r.Slot,
		DueAt:            p.parse("dueTime", r.DueTime),
		ExpiresAt:        p.parse("expiresTime", r.ExpiresTime),
		NoPersist:        r.NoPersist,
		LastCheckpoint: session.CheckpointInfo{At: p.parse("checkpointAt", r.CheckpointAt),
			Files: r.CheckpointFiles, Bytes: r.CheckpointBytes},
		CheckpointTriedAt:     p.parse("checkpointTriedAt", r.CheckpointTried),
		CheckpointProblem:     r.CheckpointIssue,
		TimeoutRefreshProblem: r.RefreshIssue,
		Deleted:               r.Deleted,
		SandboxStartedAt:      p.parse("sandboxStartedAt", r.SandboxStarted),
		Version:               r.Version,
	}
	v.Contexts = decodeContexts(&p, r.Contexts)
	if p.err != nil {
		return nil, fmt.Errorf("session %s: %w", r.SK, p.err)
	}
	return v, nil
}
