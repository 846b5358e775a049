package localaws_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sessionbox/sessionbox/pkg/localaws"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// richItem holds every attribute type, to show none is lost on disk.
func richItem(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk":    s(pk),
		"shard": s("A"),
		"due":   &types.AttributeValueMemberN{Value: "12.5"},
		"bin":   &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
		"ok":    &types.AttributeValueMemberBOOL{Value: true},
		"list":  &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x"), &types.AttributeValueMemberN{Value: "1"}}},
		"map":   &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v")}},
		"set":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
	}
}

func createIndexedTable(t *testing.T, db *dynamodb.Client) {
	t.Helper()
	_, err := db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:   aws.String("tbl"),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("shard"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("due"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String("byDue"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("shard"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("due"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
}

func TestDynamoDBDataDir(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	endpoint, stop, err := localaws.StartDynamoDB(ctx, localaws.WithDataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	db := localaws.DynamoDBClient(endpoint)
	createIndexedTable(t, db)
	for _, pk := range []string{"a", "b", "gone"} {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("tbl"), Item: richItem(pk)}); err != nil {
			t.Fatalf("PutItem: %v", err)
		}
	}
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("tbl"), Key: map[string]types.AttributeValue{"pk": s("gone")}}); err != nil {
		t.Fatalf("DeleteItem: %v", err)
	}
	// Changes reach the disk without a stop, a moment later.
	waitForFile(t, filepath.Join(dir, "dynamodb.json"))
	stop()

	endpoint, stop, err = localaws.StartDynamoDB(ctx, localaws.WithDataDir(dir))
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer stop()
	db = localaws.DynamoDBClient(endpoint)
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("tbl"), Key: map[string]types.AttributeValue{"pk": s("a")}})
	if err != nil || !reflect.DeepEqual(got.Item, richItem("a")) {
		t.Fatalf("after restart: %v, %v", got.Item, err)
	}
	q, err := db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String("tbl"), IndexName: aws.String("byDue"),
		KeyConditionExpression:    aws.String("#shard = :s AND #due <= :d"),
		ExpressionAttributeNames:  map[string]string{"#shard": "shard", "#due": "due"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": s("A"), ":d": &types.AttributeValueMemberN{Value: "20"}},
	})
	if err != nil {
		t.Fatalf("index after restart: %v", err)
	}
	if len(q.Items) != 2 {
		t.Fatalf("index after restart: %d items, want a and b", len(q.Items))
	}
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was never written", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDynamoDBDataDirCorrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dynamodb.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := localaws.StartDynamoDB(t.Context(), localaws.WithDataDir(dir)); err == nil {
		t.Fatal("started on a corrupt data file")
	}
}
