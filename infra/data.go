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

// removalPolicy is the data resources' and the secret's. Retained data is
// RETAIN_ON_UPDATE_OR_DELETE (DeletionPolicy RetainExceptOnCreate,
// UpdateReplacePolicy Retain): kept when the stack is deleted or a resource
// replaced, but deleted when the create that made it rolls back, so a
// failed first deploy leaves nothing behind that the retry would collide
// with (the secret's fixed name) or orphan (the table and bucket, empty).
func removalPolicy(retain bool) awscdk.RemovalPolicy {
	if retain {
		return awscdk.RemovalPolicy_RETAIN_ON_UPDATE_OR_DELETE
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
		Encryption: awsdynamodb.TableEncryptionV2_DynamoOwnedKey(),
		// DynamoDB refuses to delete a protected table, CloudFormation's
		// rollback of a failed create included, which would leave the stack
		// in ROLLBACK_FAILED: protection is a knob to turn on once the
		// first deploy has succeeded (infra/README, day one).
		DeletionProtection: jsii.Bool(cfg.DeletionProtection),
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
	b := awss3.NewBucket(stack, jsii.String("TransferBucket"), &awss3.BucketProps{
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
		RemovalPolicy:          removalPolicy(cfg.RetainData),
		ServerAccessLogsBucket: accessLogBucket(stack, cfg),
		ServerAccessLogsPrefix: accessLogPrefix(cfg),
	})
	if !cfg.BucketAccessLogs {
		suppress(b, nagReason{"AwsSolutions-S1", "bucketAccessLogs=false: the operator turned the transfer bucket's server access logs off", nil})
	}
	return b
}

// accessLogDays is how long the transfer bucket's access logs are kept.
const accessLogDays = 90

// accessLogBucket receives the transfer bucket's server access logs
// (context bucketAccessLogs, on by default); nil when they are off.
func accessLogBucket(stack awscdk.Stack, cfg Config) awss3.Bucket {
	if !cfg.BucketAccessLogs {
		return nil
	}
	b := awss3.NewBucket(stack, jsii.String("AccessLogBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id: jsii.String("expire-logs"), Enabled: jsii.Bool(true), Expiration: awscdk.Duration_Days(jsii.Number(accessLogDays)),
		}},
		RemovalPolicy: removalPolicy(cfg.RetainData),
	})
	suppress(b, nagReason{"AwsSolutions-S1", "this bucket holds the transfer bucket's access logs; logging it in turn would never end", nil})
	return b
}

func accessLogPrefix(cfg Config) *string {
	if !cfg.BucketAccessLogs {
		return nil
	}
	return jsii.String("transfer-bucket/")
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
