package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// addNagPacks runs cdk-nag's AwsSolutions and Serverless rule packs over
// the stack at synth: an unsuppressed finding is an error annotation, which
// fails `make synth` and the infra tests. Each suppression sits beside the
// construct it excuses, with its reason.
func addNagPacks(stack awscdk.Stack) {
	props := &cdknag.NagPackProps{Verbose: jsii.Bool(true)}
	awscdk.Aspects_Of(stack).Add(cdknag.NewAwsSolutionsChecks(props), nil)
	awscdk.Aspects_Of(stack).Add(cdknag.NewServerlessChecks(props), nil)
}

// nagReason excuses one rule, on the findings appliesTo names (IAM
// wildcards) or on all of the rule's findings when it names none.
type nagReason struct {
	rule, reason string
	appliesTo    []string // plain strings, or "/regex/" for a pattern
}

// suppress records reasons on c (and its children, where CDK made the
// resource the rule looks at, such as a role's default policy).
func suppress(c constructs.IConstruct, reasons ...nagReason) {
	var list []*cdknag.NagPackSuppression
	for _, r := range reasons {
		s := &cdknag.NagPackSuppression{Id: jsii.String(r.rule), Reason: jsii.String(r.reason)}
		if len(r.appliesTo) > 0 {
			var to []any
			for _, a := range r.appliesTo {
				if len(a) > 1 && a[0] == '/' && a[len(a)-1] == '/' {
					to = append(to, &cdknag.RegexAppliesTo{Regex: jsii.String(a)})
				} else {
					to = append(to, a)
				}
			}
			s.AppliesTo = &to
		}
		list = append(list, s)
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &list, jsii.Bool(true))
}
