package store

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// cursorKey is the LastEvaluatedKey of a session page: the table's key of
// the last session returned.
type cursorKey struct {
	PK string `json:"pk"`
	SK string `json:"sk"`
}

func encodeCursor(pk, sk string) string {
	b, _ := json.Marshal(cursorKey{PK: pk, SK: sk}) // two strings always encode
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor turns a cursor back into an ExclusiveStartKey, refusing one
// that points outside the caller's own partition: a cursor is caller input
// and must not become a way to read another principal's sessions.
func decodeCursor(cursor, pk string) (item, error) {
	if cursor == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, session.Errorf(session.ErrInvalid, "malformed cursor")
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var k cursorKey
	if err := dec.Decode(&k); err != nil || dec.More() {
		return nil, session.Errorf(session.ErrInvalid, "malformed cursor")
	}
	if k.PK != pk || !strings.HasPrefix(k.SK, "S#") || len(k.SK) < 3 {
		return nil, session.Errorf(session.ErrInvalid, "cursor does not belong to this listing")
	}
	return keyOf(k.PK, k.SK), nil
}
