package sessionenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsAPI is the one Secrets Manager call the functions make.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// e2bKeyRE is the shape of an E2B API key.
var e2bKeyRE = regexp.MustCompile(`^e2b_[0-9a-f]+$`)

// e2bKey reads the E2B API key from its secret. The functions read it at
// init, and again when E2B refuses it (keyRotator), so a rotated key takes
// effect in warm execution environments too.
//
// The secret holds the key as plain text (put-secret-value --secret-string
// "$E2B_API_KEY"), or a JSON object with an "apiKey" field. A value of
// another shape (the stack's random placeholder) is refused here, naming
// the secret, rather than by E2B on every call.
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
	if !e2bKeyRE.MatchString(v) {
		return "", fmt.Errorf("the E2B API key secret %s does not hold an E2B API key (e2b_ and hex digits, %d characters here): "+
			"set it with put-secret-value (the stack creates it with a placeholder)", arn, len(v))
	}
	return v, nil
}
