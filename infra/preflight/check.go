package main

import (
	"encoding/json"
	"fmt"
)

// Lambda's rules (Lambda developer guide, "Configuring reserved
// concurrency"): an account keeps at least minUnreserved executions
// unreserved, and its default regional quota is defaultQuota.
const (
	minUnreserved = 100
	defaultQuota  = 1000
)

// account is what `aws lambda get-account-settings` says about concurrency.
type account struct {
	AccountLimit struct {
		ConcurrentExecutions           int
		UnreservedConcurrentExecutions int
	}
}

// stackNeeds is what the synthesized template reserves, by function.
type stackNeeds struct {
	reserved  map[string]int // logical id -> ReservedConcurrentExecutions
	functions int
}

func (n stackNeeds) total() int {
	t := 0
	for _, r := range n.reserved {
		t += r
	}
	return t
}

// needsOf reads the functions and their reservations from a template.
func needsOf(template []byte) (stackNeeds, error) {
	var doc struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				ReservedConcurrentExecutions *float64
			}
		}
	}
	if err := json.Unmarshal(template, &doc); err != nil {
		return stackNeeds{}, fmt.Errorf("reading the template: %w", err)
	}
	n := stackNeeds{reserved: map[string]int{}}
	for id, r := range doc.Resources {
		if r.Type != "AWS::Lambda::Function" {
			continue
		}
		n.functions++
		if p := r.Properties.ReservedConcurrentExecutions; p != nil {
			n.reserved[id] = int(*p)
		}
	}
	if n.functions == 0 {
		return stackNeeds{}, fmt.Errorf("the template has no Lambda functions: is it sessionbox's?")
	}
	return n, nil
}

// verdict is the preflight's answer: warnings to print, and an error when
// the deploy would certainly fail.
type verdict struct {
	warnings []string
	fatal    error
}

// check compares the account's concurrency with the stack's needs.
// current is what this stack already reserves in the account (0 on a first
// deploy): the account's unreserved figure has it taken off already.
func check(a account, n stackNeeds, current int) verdict {
	var v verdict
	limit, unreserved := a.AccountLimit.ConcurrentExecutions, a.AccountLimit.UnreservedConcurrentExecutions
	want := n.total()
	if want > 0 && limit-want < minUnreserved {
		v.fatal = fmt.Errorf("the stack reserves %d concurrent executions, but the account's quota is %d and Lambda keeps %d unreserved: "+
			"the deploy would fail. Deploy with authorizerConcurrency, streamConcurrency and reaperConcurrency at 0, or raise the quota first",
			want, limit, minUnreserved)
		return v
	}
	if after := unreserved + current - want; want > 0 && after < minUnreserved {
		v.fatal = fmt.Errorf("the stack reserves %d concurrent executions; other functions in the account already reserve %d of %d, "+
			"which would leave %d unreserved, below Lambda's minimum of %d: the deploy would fail",
			want, limit-unreserved-current, limit, after, minUnreserved)
		return v
	}
	if limit < defaultQuota {
		v.warnings = append(v.warnings, fmt.Sprintf("the account's Lambda concurrency quota is %d (the default is %d): a few long streamed "+
			"calls can take every execution, and the authorizer and short routes are then throttled (5xx). Request an increase "+
			"(Service Quotas, Lambda, Concurrent executions, L-B99A9384); no reservation can protect the authorizer until the quota exceeds %d",
			limit, defaultQuota, minUnreserved))
	}
	if want == 0 && limit-minUnreserved >= 20 {
		v.warnings = append(v.warnings, fmt.Sprintf("the stack reserves no concurrency and the account could spare it: consider "+
			"-c authorizerConcurrency=10 -c reaperConcurrency=1 -c streamConcurrency=%d (infra/README, Concurrency)", max(1, (limit-minUnreserved)/5)))
	}
	return v
}
