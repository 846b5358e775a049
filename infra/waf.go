package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/jsii-runtime-go"
)

// wafRatePer5Min is the most requests one client IP may make in any five
// minutes (10 a second on average) before WAF blocks it; the stage's
// throttle and the per-key rate in the functions still apply below it.
const wafRatePer5Min = 3000

// countedRules are rules of AWS's common rule set that would block this
// API's ordinary traffic, so they only count: request bodies are code and
// file contents (larger than 8 KB, naming paths, URLs and addresses), and
// file routes take paths such as app.log or ../data in the query.
var countedRules = []string{
	"SizeRestrictions_BODY", "CrossSiteScripting_BODY", "GenericLFI_BODY", "GenericRFI_BODY", "EC2MetaDataSSRF_BODY",
	"RestrictedExtensions_QUERYARGUMENTS", "GenericLFI_QUERYARGUMENTS",
}

// addWebACL puts a regional WAFv2 web ACL in front of the stage (context
// wafWebAcl): AWS's IP reputation list, its common rule set with the rules
// above counted, and a per-IP rate rule.
func addWebACL(stack awscdk.Stack, cfg Config, api awsapigateway.RestApi) awswafv2.CfnWebACL {
	visibility := func(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true),
			MetricName:               jsii.String("sessionbox-" + cfg.Tenant + "-" + name),
			SampledRequestsEnabled:   jsii.Bool(true),
		}
	}
	managed := func(name string, priority float64, count []string) *awswafv2.CfnWebACL_RuleProperty {
		var overrides []any
		for _, r := range count {
			overrides = append(overrides, &awswafv2.CfnWebACL_RuleActionOverrideProperty{
				Name:        jsii.String(r),
				ActionToUse: &awswafv2.CfnWebACL_RuleActionProperty{Count: map[string]any{}},
			})
		}
		stmt := &awswafv2.CfnWebACL_ManagedRuleGroupStatementProperty{VendorName: jsii.String("AWS"), Name: jsii.String(name)}
		if len(overrides) > 0 {
			stmt.RuleActionOverrides = overrides
		}
		return &awswafv2.CfnWebACL_RuleProperty{
			Name:             jsii.String(name),
			Priority:         jsii.Number(priority),
			Statement:        &awswafv2.CfnWebACL_StatementProperty{ManagedRuleGroupStatement: stmt},
			OverrideAction:   &awswafv2.CfnWebACL_OverrideActionProperty{None: map[string]any{}},
			VisibilityConfig: visibility(name),
		}
	}
	rate := &awswafv2.CfnWebACL_RuleProperty{
		Name:     jsii.String("per-ip-rate"),
		Priority: jsii.Number(0),
		Statement: &awswafv2.CfnWebACL_StatementProperty{RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
			AggregateKeyType: jsii.String("IP"), Limit: jsii.Number(wafRatePer5Min),
		}},
		Action:           &awswafv2.CfnWebACL_RuleActionProperty{Block: map[string]any{}},
		VisibilityConfig: visibility("per-ip-rate"),
	}
	acl := awswafv2.NewCfnWebACL(stack, jsii.String("WebAcl"), &awswafv2.CfnWebACLProps{
		Scope:         jsii.String("REGIONAL"),
		Description:   jsii.String("sessionbox API for tenant " + cfg.Tenant),
		DefaultAction: &awswafv2.CfnWebACL_DefaultActionProperty{Allow: map[string]any{}},
		Rules: &[]any{
			rate,
			managed("AWSManagedRulesAmazonIpReputationList", 1, nil),
			managed("AWSManagedRulesCommonRuleSet", 2, countedRules),
		},
		VisibilityConfig: visibility("acl"),
	})
	awswafv2.NewCfnWebACLAssociation(stack, jsii.String("WebAclAssociation"), &awswafv2.CfnWebACLAssociationProps{
		ResourceArn: api.DeploymentStage().StageArn(),
		WebAclArn:   acl.AttrArn(),
	})
	return acl
}
