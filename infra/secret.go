package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"
)

// e2bSecret is the E2B API key's secret, created here or imported by name.
type e2bSecret struct {
	// arn goes to the functions' environment: the full ARN of a created
	// secret, the partial ARN (no random suffix) of an imported one.
	arn string
	// policyResource matches the secret in IAM: an imported secret's ARN
	// ends in a random six-character suffix the stack cannot know.
	policyResource string
	created        bool
}

// defaultSecretName is where the created secret lives, so operators can find
// it to set the key (README: aws secretsmanager put-secret-value).
func defaultSecretName(tenant string) string {
	return fmt.Sprintf("sessionbox/%s/e2b-api-key", tenant)
}

// newE2BSecret never holds the key: a created secret starts with a random
// placeholder that an operator replaces.
func newE2BSecret(stack awscdk.Stack, cfg Config) e2bSecret {
	if cfg.E2BSecretName != "" {
		s := awssecretsmanager.Secret_FromSecretNameV2(stack, jsii.String("E2BApiKey"), jsii.String(cfg.E2BSecretName))
		return e2bSecret{arn: *s.SecretArn(), policyResource: *s.SecretArn() + "-??????"}
	}
	s := awssecretsmanager.NewSecret(stack, jsii.String("E2BApiKey"), &awssecretsmanager.SecretProps{
		SecretName:    jsii.String(defaultSecretName(cfg.Tenant)),
		Description:   jsii.String(fmt.Sprintf("E2B API key for sessionbox tenant %s; set it with put-secret-value", cfg.Tenant)),
		RemovalPolicy: removalPolicy(cfg.RetainData),
	})
	suppress(s, nagReason{"AwsSolutions-SMG4",
		"an E2B API key is issued in E2B's dashboard, which a rotation Lambda cannot call; infra/README (day one) rotates it by hand with put-secret-value, and warm functions pick the new key up on E2B's 401", nil})
	return e2bSecret{arn: *s.SecretArn(), policyResource: *s.SecretArn(), created: true}
}
