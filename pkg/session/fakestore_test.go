package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// fakeStore is an in-memory Store held to the same contract as the
// DynamoDB store (storecontract_test.go runs pkg/store/storetest on it):
// conditional writes on versions, expiry by the clock, cursors bound to
// their listing, DynamoDB's item size limit and the documented errors. A
// fail hook lets tests inject faults before every operation.
type fakeStore struct {
	mu       sync.Mutex
	clock    Clock // decides which records have expired
	sessions map[Key]*Session
	runs     map[string]*Run
	keys     map[string]*APIKey
	slots    map[string]map[string]Slot // tenant → Slot.String → slot
	// reads and writes count session reads and writes.
	reads, writes atomic.Int64
	// fail, when set, is asked before each operation; an error it returns
	// is the operation's result.
	fail func(op string) error
	// delay, when set, is every operation's round trip.
	delay time.Duration
}

// fakeItemLimit is DynamoDB's 400 KB item limit; the fake measures a record
// by its JSON encoding, near enough to DynamoDB's count for the contract's
// margins (300 KB fits, 401 KB does not).
const fakeItemLimit = 400 << 10

// fakeDefaultPage and fakeMaxPage are the real store's page sizes.
const (
	fakeDefaultPage = 50
	fakeMaxPage     = 1000
)

func newFakeStore(clock Clock) *fakeStore {
	return &fakeStore{clock: clock, sessions: map[Key]*Session{}, runs: map[string]*Run{}, keys: map[string]*APIKey{},
		slots: map[string]map[string]Slot{}}
}

func cloneSession(s *Session) *Session {
	c := *s
	c.Metadata = maps.Clone(s.Metadata)
	c.Contexts = slices.Clone(s.Contexts)
	return &c
}

func cloneRun(r *Run) *Run {
	c := *r
	if r.Result != nil {
		res := *r.Result
		c.Result = &res
	}
	return &c
}

// expired reports whether a record with this expiry is gone; readers and
// writers ask the same question, so they agree at every instant.
func (f *fakeStore) expired(expiresAt time.Time) bool {
	return !expiresAt.IsZero() && !f.clock.Now().Before(expiresAt)
}

// fits refuses a record larger than one DynamoDB item.
func fits(op string, record any) error {
	b, err := json.Marshal(record)
	if err != nil {
		return Errorf(ErrInvalid, "%s: %v", op, err)
	}
	if len(b) > fakeItemLimit {
		return Errorf(ErrTooLarge, "%s: record of %d bytes exceeds the %d-byte item limit", op, len(b), fakeItemLimit)
	}
	return nil
}

func (f *fakeStore) TakeSlot(ctx context.Context, tenant string, slot Slot, limits SlotLimits) (SlotCounts, error) {
	if err := f.check("TakeSlot"); err != nil {
		return SlotCounts{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	held := f.slots[tenant]
	mine := 0
	for _, h := range held {
		if h.Principal == slot.Principal {
			mine++
		}
	}
	if _, ok := held[slot.String()]; ok {
		return SlotCounts{Live: len(held), Mine: mine}, nil
	}
	if len(held) >= limits.Tenant || mine >= limits.Principal && mine != len(held) {
		return SlotCounts{}, &SlotsFullError{Live: len(held), Mine: mine}
	}
	if held == nil {
		held = map[string]Slot{}
		f.slots[tenant] = held
	}
	held[slot.String()] = slot
	return SlotCounts{Live: len(held), Mine: mine + 1}, nil
}

func (f *fakeStore) ReleaseSlot(ctx context.Context, tenant string, slot Slot) error {
	if err := f.check("ReleaseSlot"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.slots[tenant], slot.String())
	return nil
}

func (f *fakeStore) TenantSlots(ctx context.Context, tenant string) ([]Slot, error) {
	if err := f.check("TenantSlots"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Values(f.slots[tenant])), nil
}

// heldSlots is how many slots the tenant holds.
func (f *fakeStore) heldSlots(tenant string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.slots[tenant])
}

func (f *fakeStore) check(op string) error {
	if f.delay > 0 {
		// The round trip is the point here: real time passes, as it does
		// for a remote store.
		time.Sleep(f.delay)
	}
	if f.fail != nil {
		return f.fail(op)
	}
	return nil
}

// liveSession returns the stored, unexpired session; the caller holds mu.
func (f *fakeStore) liveSession(key Key) (*Session, bool) {
	s, ok := f.sessions[key]
	if !ok || f.expired(s.ExpiresAt) {
		return nil, false
	}
	return s, true
}

func (f *fakeStore) GetSession(ctx context.Context, key Key) (*Session, error) {
	f.reads.Add(1)
	if err := f.check("GetSession"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.liveSession(key)
	if !ok {
		return nil, Errorf(ErrNotFound, "no session")
	}
	return cloneSession(s), nil
}

func (f *fakeStore) CreateSession(ctx context.Context, s *Session) error {
	f.writes.Add(1)
	if err := f.check("CreateSession"); err != nil {
		return err
	}
	if err := fits("create session", s); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.liveSession(s.Key); ok {
		return Errorf(ErrConflict, "exists")
	}
	s.Version = 1
	f.sessions[s.Key] = cloneSession(s)
	return nil
}

func (f *fakeStore) UpdateSession(ctx context.Context, s *Session) error {
	f.writes.Add(1)
	if err := f.check("UpdateSession"); err != nil {
		return err
	}
	if err := fits("update session", s); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.liveSession(s.Key)
	if !ok || cur.Version != s.Version {
		return Errorf(ErrConflict, "version mismatch")
	}
	s.Version++
	f.sessions[s.Key] = cloneSession(s)
	return nil
}

// fakeCursor is a listing's position, bound to the owner it lists so a
// cursor cannot be turned into a way into another principal's sessions.
type fakeCursor struct {
	Tenant    string `json:"t"`
	Principal string `json:"p"`
	After     string `json:"a"`
}

func encodeFakeCursor(c fakeCursor) string {
	b, _ := json.Marshal(c) // three strings always encode
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeFakeCursor returns the session id a listing resumes after.
func decodeFakeCursor(cursor, tenant, principal string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	var c fakeCursor
	if err != nil || json.Unmarshal(b, &c) != nil {
		return "", Errorf(ErrInvalid, "malformed cursor")
	}
	if c.Tenant != tenant || c.Principal != principal || c.After == "" {
		return "", Errorf(ErrInvalid, "cursor does not belong to this listing")
	}
	return c.After, nil
}

func (f *fakeStore) ListSessions(ctx context.Context, tenant, principal string, limit int, cursor string) ([]*Session, string, error) {
	if err := f.check("ListSessions"); err != nil {
		return nil, "", err
	}
	after, err := decodeFakeCursor(cursor, tenant, principal)
	if err != nil {
		return nil, "", err
	}
	limit = min(fakeMaxPage, limit)
	if limit <= 0 {
		limit = fakeDefaultPage
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []*Session
	for k, s := range f.sessions {
		if k.Tenant == tenant && k.Principal == principal && k.SessionID > after && !f.expired(s.ExpiresAt) {
			all = append(all, cloneSession(s))
		}
	}
	slices.SortFunc(all, func(a, b *Session) int { return strings.Compare(a.SessionID, b.SessionID) })
	if len(all) <= limit {
		return all, "", nil
	}
	next := fakeCursor{Tenant: tenant, Principal: principal, After: all[limit-1].SessionID}
	return all[:limit], encodeFakeCursor(next), nil
}

func (f *fakeStore) DueSessions(ctx context.Context, t time.Time, limit int) ([]*Session, error) {
	if err := f.check("DueSessions"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, Errorf(ErrInvalid, "due sessions: limit %d, want at least 1", limit)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var due []*Session
	for _, s := range f.sessions {
		if s.State.Live() && !s.DueAt.IsZero() && !s.DueAt.After(t) && !f.expired(s.ExpiresAt) {
			due = append(due, cloneSession(s))
		}
	}
	slices.SortFunc(due, func(a, b *Session) int { return a.DueAt.Compare(b.DueAt) })
	return due[:min(limit, len(due))], nil
}

// liveRun returns the stored, unexpired run; the caller holds mu.
func (f *fakeStore) liveRun(id string) (*Run, bool) {
	r, ok := f.runs[id]
	if !ok || f.expired(r.ExpiresAt) {
		return nil, false
	}
	return r, true
}

func (f *fakeStore) CreateRun(ctx context.Context, r *Run) error {
	if err := f.check("CreateRun"); err != nil {
		return err
	}
	if err := fits("create run", r); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.liveRun(r.ID); ok {
		return Errorf(ErrConflict, "run exists")
	}
	r.Version = 1
	f.runs[r.ID] = cloneRun(r)
	return nil
}

func (f *fakeStore) GetRun(ctx context.Context, id string) (*Run, error) {
	if err := f.check("GetRun"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.liveRun(id)
	if !ok {
		return nil, Errorf(ErrNotFound, "no run")
	}
	return cloneRun(r), nil
}

func (f *fakeStore) UpdateRun(ctx context.Context, r *Run) error {
	if err := f.check("UpdateRun"); err != nil {
		return err
	}
	if err := fits("update run", r); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.liveRun(r.ID)
	if !ok || cur.Version != r.Version {
		return Errorf(ErrConflict, "run version mismatch")
	}
	r.Version++
	f.runs[r.ID] = cloneRun(r)
	return nil
}

func (f *fakeStore) PutAPIKey(ctx context.Context, k *APIKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.keys[k.Hash]; ok {
		return Errorf(ErrConflict, "key exists")
	}
	c := *k
	f.keys[k.Hash] = &c
	return nil
}

func (f *fakeStore) GetAPIKey(ctx context.Context, hash string) (*APIKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[hash]
	if !ok {
		return nil, Errorf(ErrNotFound, "no key")
	}
	c := *k
	return &c, nil
}

func (f *fakeStore) ListAPIKeys(ctx context.Context) ([]*APIKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*APIKey
	for _, k := range f.keys {
		c := *k
		out = append(out, &c)
	}
	return out, nil
}

func (f *fakeStore) RevokeAPIKey(ctx context.Context, hash string, t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[hash]
	if !ok {
		return Errorf(ErrNotFound, "no key")
	}
	k.RevokedAt = t
	return nil
}

func (f *fakeStore) session(key Key) *Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.sessions[key]; ok {
		return cloneSession(s)
	}
	return nil
}

func (f *fakeStore) put(s *Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions[s.Key] = cloneSession(s)
}
