// Command infra is the sessionbox CDK app: one stack per tenant, the tenant
// from context (`cdk synth -c tenant=acme`). See README.md.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	if _, err := Build(app); err != nil {
		fmt.Fprintln(os.Stderr, "sessionbox infra:", err)
		jsii.Close()
		os.Exit(1)
	}
	app.Synth(nil)
}
