package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Event detail types (shared/DESIGN.md, "Events").
const (
	eventSource       = "sessionbox"
	typeRunRequested  = "Run Requested"
	typeRunCompleted  = "Run Completed"
	secretReadActions = "secretsmanager:GetSecretValue"
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
// the code makes.
var (
	tableReadWrite = []string{
		"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
		"dynamodb:Query", "dynamodb:ConditionCheckItem",
	}
	objectReadWrite = []string{"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"}
)

// grantsFor returns the statements for one function: only what it calls.
func grantsFor(name string, r resources) []awsiam.PolicyStatement {
	switch name {
	case "start", "stop", "install":
		return []awsiam.PolicyStatement{tableRW(r)}
	case "status":
		// GET /v1/runs/{runId} presigns large results.
		return []awsiam.PolicyStatement{tableRW(r), objects("ReadResults", []string{"s3:GetObject"}, r.objectsUnder(prefixResults))}
	case "execute":
		// Artifacts go to transfers/ for download URLs; POST .../runs
		// publishes "Run Requested".
		return append([]awsiam.PolicyStatement{tableRW(r), putEvents(r, typeRunRequested)},
			transferObjects(r, objectReadWrite)...)
	case "files":
		return append([]awsiam.PolicyStatement{tableRW(r)},
			transferObjects(r, append([]string{"s3:DeleteObject"}, objectReadWrite...))...)
	case "runs":
		// Results and artifacts; sqs:SendMessage on the dead-letter queue
		// comes with its async on-failure destination (stack.go).
		return append([]awsiam.PolicyStatement{
			tableRW(r),
			putEvents(r, typeRunCompleted),
		}, transferObjects(r, objectReadWrite, prefixResults)...)
	case "reaper":
		return []awsiam.PolicyStatement{
			tableRW(r),
			statement("QueryDeadlineIndex", []string{"dynamodb:Query"}, *r.table.TableArn()+"/index/"+indexDeadline),
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

func (r resources) objectsUnder(prefix string) string {
	return *r.bucket.ArnForObjects(jsii.String(prefix + "*"))
}

func objects(sid string, actions []string, arns ...string) awsiam.PolicyStatement {
	return statement(sid, actions, arns...)
}

// transferObjects grants object actions under transfers/ (and any extra
// prefixes) plus listing transfers/, without which S3 answers 403 instead
// of 404 for a missing upload.
func transferObjects(r resources, actions []string, extra ...string) []awsiam.PolicyStatement {
	arns := []string{r.objectsUnder(prefixTransfers)}
	for _, p := range extra {
		arns = append(arns, r.objectsUnder(p))
	}
	list := statement("ListTransfers", []string{"s3:ListBucket"}, *r.bucket.BucketArn())
	list.AddCondition(jsii.String("StringLike"), map[string]any{"s3:prefix": []string{prefixTransfers + "*"}})
	return []awsiam.PolicyStatement{objects("ReadWriteObjects", actions, arns...), list}
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

// secretRead is granted to the functions that call E2B.
func secretRead(r resources) awsiam.PolicyStatement {
	return statement("ReadE2BKey", []string{secretReadActions, "secretsmanager:DescribeSecret"}, r.secret.policyResource)
}
