package main

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Event detail types (docs/architecture.md, "Runs").
const (
	eventSource      = "sessionbox"
	typeRunRequested = "Run Requested"
	typeRunCompleted = "Run Completed"
)

// resources are what the functions are granted on.
type resources struct {
	table  awsdynamodb.TableV2
	bucket awss3.Bucket
	bus    awsevents.EventBus
	dlq    awssqs.Queue
	secret e2bSecret
}

// Action lists are spelled out, never wildcards: a grant names each call
// the code makes. pkg/store calls GetItem, PutItem, UpdateItem and Query;
// pkg/blob puts (multipart when large), gets and presigns.
var (
	tableReadWrite  = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}
	objectReadWrite = []string{"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"}
)

// grantsFor returns the statements for one function: only what it calls.
func grantsFor(name string, r resources) []awsiam.PolicyStatement {
	switch name {
	case "start", "install", "fetch":
		// A fresh sandbox gets the session's workspace back.
		return []awsiam.PolicyStatement{tableRW(r), readWorkspaces(r)}
	case "stop":
		// Stop checkpoints, POST .../checkpoint too; DELETE removes the
		// workspace.
		return []awsiam.PolicyStatement{tableRW(r), workspacesRW(r), listBucket(r, "ListWorkspaces")}
	case "status":
		// GET /v1/runs/{runId} presigns a large result's download; the
		// URL carries this role's rights, so it needs to read them.
		return []awsiam.PolicyStatement{tableRW(r), readObjects(r, prefixRunResults)}
	case "execute":
		// Artifacts for download URLs; POST .../runs publishes
		// "Run Requested".
		return []awsiam.PolicyStatement{tableRW(r), putEvents(r, typeRunRequested),
			objects(r, prefixArtifacts), readWorkspaces(r)}
	case "mcp":
		// execute_python's artifacts come back with download URLs.
		return []awsiam.PolicyStatement{tableRW(r), objects(r, prefixArtifacts), readWorkspaces(r)}
	case "files":
		return []awsiam.PolicyStatement{tableRW(r), objects(r, prefixTransfers, prefixDownloads), listTransfers(r), readWorkspaces(r)}
	case "runs":
		// Large results and artifacts. sqs:SendMessage on the dead-letter
		// queue comes with its async on-failure destination (stack.go).
		return []awsiam.PolicyStatement{tableRW(r), putEvents(r, typeRunCompleted),
			objects(r, prefixRunResults, prefixArtifacts), readWorkspaces(r)}
	case "reaper":
		return []awsiam.PolicyStatement{
			tableRW(r),
			statement("QueryDeadlineIndex", []string{"dynamodb:Query"}, *r.table.TableArn()+"/index/"+indexDeadline),
			// Checkpoints before a kill or pause, and after activity.
			workspacesRW(r),
			listBucket(r, "ListWorkspaces"),
		}
	case "authorizer":
		return []awsiam.PolicyStatement{authorizerKeys(r)}
	}
	return nil
}

func statement(sid string, actions []string, resources ...string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String(sid),
		Actions:   jsii.Strings(actions...),
		Resources: jsii.Strings(resources...),
	})
}

func tableRW(r resources) awsiam.PolicyStatement {
	return statement("ReadWriteTable", tableReadWrite, *r.table.TableArn())
}

// authorizerKeys lets the authorizer read API key items and nothing else:
// the leading key of every item it may touch starts with KEY#.
func authorizerKeys(r resources) awsiam.PolicyStatement {
	s := statement("ReadApiKeys", []string{"dynamodb:GetItem"}, *r.table.TableArn())
	s.AddCondition(jsii.String("ForAllValues:StringLike"), map[string]any{
		"dynamodb:LeadingKeys": []string{"KEY#*"},
	})
	return s
}

// objects grants reading and writing objects under the given prefixes.
func objects(r resources, prefixes ...string) awsiam.PolicyStatement {
	var arns []string
	for _, p := range prefixes {
		arns = append(arns, *r.bucket.ArnForObjects(jsii.String(p + "*")))
	}
	return statement("ReadWriteObjects", objectReadWrite, arns...)
}

// readObjects grants reading objects under the given prefixes.
func readObjects(r resources, prefixes ...string) awsiam.PolicyStatement {
	var arns []string
	for _, p := range prefixes {
		arns = append(arns, *r.bucket.ArnForObjects(jsii.String(p + "*")))
	}
	return statement("ReadObjects", []string{"s3:GetObject"}, arns...)
}

// readWorkspaces lets a function that may start a sandbox restore the
// session's workspace into it.
func readWorkspaces(r resources) awsiam.PolicyStatement {
	return statement("ReadWorkspaces", []string{"s3:GetObject"}, *r.bucket.ArnForObjects(jsii.String(prefixWorkspaces + "*")))
}

// workspacesRW lets a function checkpoint workspaces and delete them
// (a checkpoint deletes an object whose file changed as it was read).
func workspacesRW(r resources) awsiam.PolicyStatement {
	return statement("ReadWriteWorkspaces", append(slices.Clone(objectReadWrite), "s3:DeleteObject"),
		*r.bucket.ArnForObjects(jsii.String(prefixWorkspaces + "*")))
}

// listBucket is listTransfers under another name: a checkpoint reads the
// last manifest, and a session's first has none, which S3 reports as 404
// only to a caller with s3:ListBucket.
func listBucket(r resources, sid string) awsiam.PolicyStatement {
	return statement(sid, []string{"s3:ListBucket"}, *r.bucket.BucketArn())
}

// listTransfers lets files see that an upload is missing: without
// s3:ListBucket S3 answers 403 instead of 404 for an absent key. S3 checks
// that right on the bucket with no prefix in the request, so a grant
// conditioned on s3:prefix never applies to a HeadObject or GetObject: it
// is unconditioned. It reveals key names only, in a bucket that holds this
// one tenant's objects.
func listTransfers(r resources) awsiam.PolicyStatement {
	return statement("ListTransfers", []string{"s3:ListBucket"}, *r.bucket.BucketArn())
}

// putEvents allows one detail type from the sessionbox source on the
// tenant's bus.
func putEvents(r resources, detailType string) awsiam.PolicyStatement {
	s := statement("PutEvents", []string{"events:PutEvents"}, *r.bus.EventBusArn())
	s.AddCondition(jsii.String("StringEquals"), map[string]any{
		"events:source":      eventSource,
		"events:detail-type": detailType,
	})
	return s
}

// secretRead is granted to the functions that call E2B; pkg/lambdaenv
// reads the key once with GetSecretValue.
func secretRead(r resources) awsiam.PolicyStatement {
	return statement("ReadE2BKey", []string{"secretsmanager:GetSecretValue"}, r.secret.policyResource)
}
