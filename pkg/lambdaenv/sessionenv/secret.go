package sessionenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsAPI is the one Secrets Manager call the functions make.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// e2bKey reads the E2B API key from its secret. The functions call it once,
// at init, and keep the key for the life of the execution environment: a
// rotated key reaches new environments, and E2B keys are long-lived.
//
// The secret holds the key as plain text (put-secret-value --secret-string
// "$E2B_API_KEY"), or a JSON object with an "apiKey" field.
func e2bKey(ctx context.Context, sm SecretsAPI, arn string) (string, error) {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return "", fmt.Errorf("read the E2B API key secret %s: %w", arn, err)
	}
	v := strings.TrimSpace(aws.ToString(out.SecretString))
	if strings.HasPrefix(v, "{") {
		var obj struct {
			APIKey string `json:"apiKey"`
		}
		if err := json.Unmarshal([]byte(v), &obj); err != nil {
			return "", fmt.Errorf("the E2B API key secret %s is JSON but not {\"apiKey\": ...}: %w", arn, err)
		}
		v = strings.TrimSpace(obj.APIKey)
	}
	if v == "" {
		return "", errors.New("the E2B API key secret " + arn + " is empty: set it with put-secret-value")
	}
	return v, nil
}
