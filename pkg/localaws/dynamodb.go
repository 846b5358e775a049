package localaws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"
)

// StartDynamoDB serves minidyn's DynamoDB-compatible API on a free
// 127.0.0.1 port. Data lives in memory until stop is called or ctx ends.
func StartDynamoDB(ctx context.Context) (endpoint string, stop func(), err error) {
	return serve(ctx, "dynamodb", server.NewServer())
}

// DynamoDBClient returns an SDK client for a local endpoint, signing with
// static dummy credentials. optFns adjust it further (tests tune retries).
func DynamoDBClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, ""),
	}, optFns...)
}
