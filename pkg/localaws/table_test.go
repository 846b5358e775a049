package localaws

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CreateTestTable makes table "t", keyed by the string pk alone, for this
// package's tests and benchmarks, the external test package's included.
func CreateTestTable(tb testing.TB, c *dynamodb.Client) {
	tb.Helper()
	_, err := c.CreateTable(tb.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String("t"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		tb.Fatalf("CreateTable: %v", err)
	}
}
