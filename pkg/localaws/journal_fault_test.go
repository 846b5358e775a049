package localaws

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// fullDisk is the journal on a file system that fills up: its next fails
// appends write half the entry, then report ENOSPC, as a short write does.
type fullDisk struct {
	*os.File
	fails int
}

func (f *fullDisk) Write(b []byte) (int, error) {
	if f.fails == 0 {
		return f.File.Write(b)
	}
	f.fails--
	n, _ := f.File.Write(b[:len(b)/2])
	return n, syscall.ENOSPC
}

// failNextAppends makes db's next n journal appends fail.
func failNextAppends(t *testing.T, db *DynamoDB, n int) {
	t.Helper()
	p := db.h.(*persistentDB)
	p.jmu.Lock()
	defer p.jmu.Unlock()
	if d, ok := p.journal.(*fullDisk); ok {
		d.fails = n
		return
	}
	p.journal = &fullDisk{File: p.journal.(*os.File), fails: n}
}

// TestJournalAppendFailsFirst: a write whose journal append fails is not
// applied, so the SDK's retry of the 500 applies it once: a counter moves
// by one, and a put-if-absent succeeds rather than meeting itself as a
// conflict. The half-written entries are cut off, so a restart replays
// exactly the answered writes.
func TestJournalAppendFailsFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openDB(t, dir)
	t.Cleanup(db.Close)
	c := db.Client()
	CreateTestTable(t, c)
	add(t, c, "a")

	failNextAppends(t, db, 2) // two attempts of the next write fail; the third is saved
	add(t, c, "a")
	if got := counter(t, c, "a"); got != "2" {
		t.Fatalf("after a retried write, a's counter is %q, want 2", got)
	}

	failNextAppends(t, db, 1)
	_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String("t"),
		Item:                map[string]types.AttributeValue{"pk": str("b"), "n": &types.AttributeValueMemberN{Value: "7"}},
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if err != nil {
		t.Fatalf("a put-if-absent whose first append failed: %v", err)
	}

	// All attempts fail: the client gets the error and nothing changed.
	failNextAppends(t, db, 10)
	_, err = c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
		Key:                       map[string]types.AttributeValue{"pk": str("a")},
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}},
		func(o *dynamodb.Options) { o.RetryMaxAttempts = 2 })
	if err == nil {
		t.Fatal("a write that could not be saved was answered as a success")
	}
	if got := counter(t, c, "a"); got != "2" {
		t.Fatalf("after an unsaved write, a's counter is %q, want 2", got)
	}
	failNextAppends(t, db, 0)

	// A restart replays the journal alone (no snapshot was taken).
	again := openDB(t, dir)
	defer again.Close()
	c2 := again.Client()
	if got := counter(t, c2, "a"); got != "2" {
		t.Fatalf("after a restart, a's counter is %q, want 2", got)
	}
	if got := counter(t, c2, "b"); got != "7" {
		t.Fatalf("after a restart, b's counter is %q, want 7", got)
	}
}

// TestJournalRefusedWriteLeavesNoEntry: a conditional write refused by the
// table leaves nothing in the journal to replay.
func TestJournalRefusedWriteLeavesNoEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openDB(t, dir)
	t.Cleanup(db.Close)
	c := db.Client()
	CreateTestTable(t, c)
	add(t, c, "a")
	p := db.h.(*persistentDB)
	before, _ := p.journal.Stat()
	_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String("t"),
		Item: map[string]types.AttributeValue{"pk": str("a")}, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if err == nil {
		t.Fatal("a put over an existing item was not refused")
	}
	after, _ := p.journal.Stat()
	if before.Size() != after.Size() {
		t.Fatalf("a refused write changed the journal from %d to %d bytes", before.Size(), after.Size())
	}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestJournalReserve: on a full disk the journal gives up its reserve
// and the write goes through (a stop or delete that frees space must be
// recorded); the next successful snapshot makes the reserve again.
func TestJournalReserve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openDB(t, dir)
	t.Cleanup(db.Close)
	c := db.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	CreateTestTable(t, c)
	reserve := filepath.Join(dir, reserveFile)
	if fi, err := os.Stat(reserve); err != nil || fi.Size() != reserveBytes {
		t.Fatalf("no reserve at start: %v", err)
	}
	failNextAppends(t, db, 1)
	add(t, c, "a") // no retry allowed: the reserve must carry it
	if _, err := os.Stat(reserve); err == nil {
		t.Fatal("the reserve is still there after a full disk")
	}
	if err := db.h.(*persistentDB).saveIfDirty(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(reserve); err != nil {
		t.Fatalf("the reserve was not made again after a snapshot: %v", err)
	}
	if got := counter(t, c, "a"); got != "1" {
		t.Fatalf("a's counter is %q, want 1", got)
	}
}
