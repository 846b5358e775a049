package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// CreateTable makes the table the store needs (keys, the byDeadline index,
// on-demand billing), waits until it and its index are active, and asks for
// TTL on expiresAt. It is for local mode and tests; production tables come
// from the CDK stack. An existing table is left as it is. Emulators that do
// not implement UpdateTimeToLive are tolerated: nothing deletes expired
// records there, and reads ignore them anyway.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	_, err := client.CreateTable(ctx, tableDefinition(table))
	if err != nil && !isAPIError(err, "ResourceInUseException") {
		return fmt.Errorf("store: create table %s: %w", table, err)
	}
	if err := waitActive(ctx, client, table); err != nil {
		return err
	}
	return enableTTL(ctx, client, table)
}

func tableDefinition(table string) *dynamodb.CreateTableInput {
	str := types.ScalarAttributeTypeS
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: str},
			{AttributeName: aws.String(attrSK), AttributeType: str},
			{AttributeName: aws.String(attrDueShard), AttributeType: str},
			{AttributeName: aws.String(attrDueAt), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(IndexByDeadline),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrDueShard), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrDueAt), KeyType: types.KeyTypeRange},
			},
			// The reaper needs whole sessions; projecting everything saves
			// a read per due session.
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	}
}

// waitActive polls DescribeTable until the table and its indexes are active.
func waitActive(ctx context.Context, client *dynamodb.Client, table string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("store: describe table %s: %w", table, err)
		}
		if active(out.Table) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: table %s not active: %w", table, ctx.Err())
		case <-tick.C:
		}
	}
}

func active(t *types.TableDescription) bool {
	// Some emulators (minidyn) leave the status empty: they have no
	// creating phase.
	if t == nil || (t.TableStatus != "" && t.TableStatus != types.TableStatusActive) {
		return false
	}
	for _, ix := range t.GlobalSecondaryIndexes {
		if ix.IndexStatus != "" && ix.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}

func enableTTL(ctx context.Context, client *dynamodb.Client, table string) error {
	_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrExpiresAt),
			Enabled:       aws.Bool(true),
		},
	})
	if err == nil || ttlUnsupported(err) {
		return nil
	}
	return fmt.Errorf("store: enable TTL on %s: %w", table, err)
}

// ttlUnsupported recognises the answers of emulators without the TTL API
// (dynalite: UnknownOperationException; minidyn: a 400 whose body is not
// DynamoDB's JSON at all) and of a table whose TTL is already on.
func ttlUnsupported(err error) bool {
	if isAPIError(err, "UnknownOperationException") {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "already enabled") {
		return true
	}
	var deserErr *smithy.DeserializationError
	var respErr *smithyhttp.ResponseError
	return errors.As(err, &deserErr) && errors.As(err, &respErr) && respErr.HTTPStatusCode() == http.StatusBadRequest
}

func isAPIError(err error, code string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == code
}
