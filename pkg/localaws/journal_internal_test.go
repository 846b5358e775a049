package localaws

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// neverSave leaves every write to the journal: no snapshot is taken while
// the emulator runs.
func neverSave(c *dynamoConfig) { c.saveEvery = time.Hour }

func openDB(t *testing.T, dir string) *DynamoDB {
	t.Helper()
	db, err := NewDynamoDB(t.Context(), WithDataDir(dir), neverSave)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// counter reads item pk's counter n, "" when there is no such item.
func counter(t testing.TB, c *dynamodb.Client, pk string) string {
	t.Helper()
	out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if n, ok := out.Item["n"].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}

func add(t testing.TB, c *dynamodb.Client, pk string) {
	t.Helper()
	_, err := c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String("t"),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}})
	if err != nil {
		t.Fatalf("UpdateItem: %v", err)
	}
}

// TestJournalSurvivesKill: writes answered before the process dies between
// two snapshots (nothing closed, nothing saved: as after SIGKILL) are all
// there at the next start, each applied once, and a write torn by the
// death is dropped.
func TestJournalSurvivesKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := openDB(t, dir)
	t.Cleanup(first.Close)
	c := first.Client()
	CreateTestTable(t, c)
	for range 3 {
		add(t, c, "a") // not idempotent: a write applied twice would show
	}
	add(t, c, "b")
	if _, err := os.Stat(filepath.Join(dir, snapshotFile)); err == nil {
		t.Fatal("a snapshot was taken; the test means to read the journal alone")
	}
	// The death tore a last write half way.
	j, err := os.OpenFile(filepath.Join(dir, journalFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.WriteString(`{"op":"UpdateItem","req":{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpr`); err != nil {
		t.Fatal(err)
	}
	j.Close()

	second := openDB(t, dir)
	c = second.Client()
	if got := counter(t, c, "a"); got != "3" {
		t.Fatalf("after the kill, a's counter is %q, want 3", got)
	}
	if got := counter(t, c, "b"); got != "1" {
		t.Fatalf("after the kill, b's counter is %q, want 1", got)
	}
	// The replay went into a snapshot and emptied the journal, so writes
	// after it append cleanly and a third start sees them all.
	add(t, c, "a")
	third := openDB(t, dir)
	defer third.Close()
	if got := counter(t, third.Client(), "a"); got != "4" {
		t.Fatalf("after a second kill, a's counter is %q, want 4", got)
	}
	second.Close()
}

// TestJournalCorrupt: a line before the last that is no write stops the
// start, naming the journal, rather than losing what follows it.
func TestJournalCorrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := "not a write\n" + `{"op":"DeleteTable","req":{"TableName":"t"}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, journalFile), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewDynamoDB(t.Context(), WithDataDir(dir), neverSave)
	if err == nil || !strings.Contains(err.Error(), journalFile) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("start on a corrupt journal: %v", err)
	}
}
