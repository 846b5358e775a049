package lambdaenv

import (
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// awsConfig is the AWS configuration of a function, from the variables
// Lambda sets: the region and the execution role's credentials. It reads
// no shared config files and carries no other credential providers (STS,
// SSO, IMDS): config.LoadDefaultConfig would link those into every
// bootstrap and read files at init, for nothing a function uses.
func awsConfig(getenv func(string) string) (aws.Config, error) {
	region := first(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"))
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	var errs []error
	if region == "" {
		errs = append(errs, errors.New("AWS_REGION is required"))
	}
	if id == "" || secret == "" {
		errs = append(errs, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are required (Lambda sets them from the execution role)"))
	}
	if err := errors.Join(errs...); err != nil {
		return aws.Config{}, err
	}
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN")),
	}, nil
}

// endpoint is the SDK's endpoint override for one service:
// AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL, else none (nil).
func endpoint(getenv func(string) string, service string) *string {
	if v := first(getenv("AWS_ENDPOINT_URL_"+service), getenv("AWS_ENDPOINT_URL")); v != "" {
		return aws.String(v)
	}
	return nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
