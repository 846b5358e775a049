package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"strings"
)

// Table layout from docs/architecture.md ("Storage"); pkg/store writes it.
const (
	attrPK        = "pk"
	attrSK        = "sk"
	attrDueShard  = "dueShard"
	attrDueAt     = "dueAt"
	attrExpiresAt = "expiresAt"
	indexDeadline = "byDeadline"
)

// Key prefixes in the transfer bucket, as pkg/session writes them. Grants
// are scoped to them: a new prefix needs a grant here.
const (
	prefixTransfers  = "transfers/"  // upload tickets and uploaded data
	prefixDownloads  = "downloads/"  // files copied out of sandboxes
	prefixArtifacts  = "artifacts/"  // files an execution produced
	prefixRunResults = "runs/"       // results too large for the run record
	prefixWorkspaces = "workspaces/" // sessions' durable /home/user
)

func removalPolicy(retain bool) awscdk.RemovalPolicy {
	if retain {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}

// newTable is the single table for sessions, runs and API keys.
func newTable(stack awscdk.Stack, cfg Config) awsdynamodb.TableV2 {
	return awsdynamodb.NewTableV2(stack, jsii.String("Table"), &awsdynamodb.TablePropsV2{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(attrPK), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(attrSK), Type: awsdynamodb.AttributeType_STRING},
		Billing:      awsdynamodb.Billing_OnDemand(nil),
		// The reaper queries due sessions here instead of scanning; only
		// live sessions carry dueShard, so the index stays small.
		GlobalSecondaryIndexes: &[]*awsdynamodb.GlobalSecondaryIndexPropsV2{{
			IndexName:      jsii.String(indexDeadline),
			PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(attrDueShard), Type: awsdynamodb.AttributeType_STRING},
			SortKey:        &awsdynamodb.Attribute{Name: jsii.String(attrDueAt), Type: awsdynamodb.AttributeType_NUMBER},
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		}},
		TimeToLiveAttribute: jsii.String(attrExpiresAt),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Encryption:         awsdynamodb.TableEncryptionV2_DynamoOwnedKey(),
		DeletionProtection: jsii.Bool(cfg.RetainData),
		RemovalPolicy:      removalPolicy(cfg.RetainData),
	})
}

// Object lifetimes in the transfer bucket. Large run results live as long
// as the run records that name them (session.Config.RunRetention, 7 days,
// counted from the run's creation; the result is written later, so it
// outlives its record); everything else is short-lived.
const (
	transferDays  = 1
	runResultDays = 7
	// workspaceDays is session.Config.WorkspaceRetention (30 days after a
	// session's last checkpoint) plus session.WorkspaceExpiryMargin (7
	// days, the longest an object is reused by new checkpoints), so no
	// object a live manifest names expires first.
	workspaceDays = 37
)

// newBucket holds presigned uploads, downloads, artifacts and large run
// results, each prefix with its own lifetime.
func newBucket(stack awscdk.Stack, cfg Config) awss3.Bucket {
	expire := func(prefix string, days float64) *awss3.LifecycleRule {
		return &awss3.LifecycleRule{
			Id:                                  jsii.String("expire-" + strings.TrimSuffix(prefix, "/")),
			Enabled:                             jsii.Bool(true),
			Prefix:                              jsii.String(prefix),
			Expiration:                          awscdk.Duration_Days(jsii.Number(days)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(transferDays)),
		}
	}
	return awss3.NewBucket(stack, jsii.String("TransferBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		Versioned:         jsii.Bool(false),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Cors:              bucketCors(cfg.AllowedOrigins),
		LifecycleRules: &[]*awss3.LifecycleRule{
			expire(prefixTransfers, transferDays),
			expire(prefixDownloads, transferDays),
			expire(prefixArtifacts, transferDays),
			expire(prefixRunResults, runResultDays),
			expire(prefixWorkspaces, workspaceDays),
		},
		RemovalPolicy: removalPolicy(cfg.RetainData),
	})
}

// bucketCors lets browsers PUT to and GET from presigned URLs directly.
func bucketCors(origins []string) *[]*awss3.CorsRule {
	if len(origins) == 0 {
		return nil
	}
	return &[]*awss3.CorsRule{bucketCorsRule(jsii.Strings(origins...))}
}

func bucketCorsRule(origins *[]*string) *awss3.CorsRule {
	return &awss3.CorsRule{
		AllowedOrigins: origins,
		AllowedMethods: &[]awss3.HttpMethods{awss3.HttpMethods_GET, awss3.HttpMethods_PUT, awss3.HttpMethods_HEAD},
		AllowedHeaders: jsii.Strings("content-type", "content-length", "content-md5", "x-amz-*"),
		ExposedHeaders: jsii.Strings("ETag", "Content-Length", "Content-Type"),
		MaxAge:         jsii.Number(3000),
	}
}
