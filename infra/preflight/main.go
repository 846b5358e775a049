// Command preflight warns, before a deploy, when the account's Lambda
// concurrency does not fit what the synthesized stack needs (infra/README,
// "Concurrency"). `make deploy` runs it after synthesizing:
//
//	go run ./preflight -template ../cdk.out/sessionbox-acme.template.json -stack sessionbox-acme
//
// It reads the account with the AWS CLI and the credentials the deploy
// uses. Exit status 1 means the deploy would fail; warnings exit 0.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func main() {
	template := flag.String("template", "", "synthesized CloudFormation template (cdk.out/sessionbox-<tenant>.template.json)")
	stack := flag.String("stack", "", "stack name, to count what an existing deployment already reserves")
	flag.Parse()
	if err := run(*template, *stack); err != nil {
		fmt.Fprintln(os.Stderr, "preflight:", err)
		os.Exit(1)
	}
}

func run(template, stack string) error {
	if template == "" {
		return errors.New("-template is required")
	}
	raw, err := os.ReadFile(template)
	if err != nil {
		return err
	}
	needs, err := needsOf(raw)
	if err != nil {
		return err
	}
	var acct account
	if err := awsJSON(&acct, "lambda", "get-account-settings"); err != nil {
		return err
	}
	v := check(acct, needs, alreadyReserved(stack))
	fmt.Printf("preflight: account concurrency %d (%d unreserved); the stack reserves %d across %d functions\n",
		acct.AccountLimit.ConcurrentExecutions, acct.AccountLimit.UnreservedConcurrentExecutions, needs.total(), needs.functions)
	for _, w := range v.warnings {
		fmt.Println("preflight: warning:", w)
	}
	return v.fatal
}

// alreadyReserved sums the reservations of the stack's deployed functions,
// 0 when it is not deployed (or cannot be read: the check is then stricter).
func alreadyReserved(stack string) int {
	if stack == "" {
		return 0
	}
	var res struct {
		StackResourceSummaries []struct{ ResourceType, PhysicalResourceId string }
	}
	if err := awsJSON(&res, "cloudformation", "list-stack-resources", "--stack-name", stack); err != nil {
		return 0
	}
	total := 0
	for _, r := range res.StackResourceSummaries {
		if r.ResourceType != "AWS::Lambda::Function" {
			continue
		}
		var c struct{ ReservedConcurrentExecutions int }
		if awsJSON(&c, "lambda", "get-function-concurrency", "--function-name", r.PhysicalResourceId) == nil {
			total += c.ReservedConcurrentExecutions
		}
	}
	return total
}

// awsJSON runs the AWS CLI and decodes its JSON output.
func awsJSON(v any, args ...string) error {
	out, err := exec.Command("aws", append(args, "--output", "json")...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("aws %s: %s", strings.Join(args, " "), strings.TrimSpace(string(ee.Stderr)))
		}
		return fmt.Errorf("aws %s: %w (is the AWS CLI installed?)", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("aws %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
