package main

import (
	"strings"
	"testing"
)

func acct(limit, unreserved int) account {
	var a account
	a.AccountLimit.ConcurrentExecutions = limit
	a.AccountLimit.UnreservedConcurrentExecutions = unreserved
	return a
}

func needs(reserved ...int) stackNeeds {
	n := stackNeeds{reserved: map[string]int{}, functions: 11}
	for i, r := range reserved {
		n.reserved[string(rune('A'+i))] = r
	}
	return n
}

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		a         account
		n         stackNeeds
		current   int
		fatal     string // "" none
		warnings  []string
		noWarning bool
	}{
		{name: "new account, defaults", a: acct(10, 10), n: needs(), warnings: []string{"quota is 10", "L-B99A9384"}},
		{name: "new account, reservations", a: acct(10, 10), n: needs(1), fatal: "quota is 10"},
		{name: "default quota, nothing reserved", a: acct(1000, 1000), n: needs(), warnings: []string{"streamConcurrency=180"}},
		{name: "default quota, reservations fit", a: acct(1000, 1000), n: needs(10, 1, 20, 20), noWarning: true},
		{name: "others reserved most", a: acct(1000, 150), n: needs(10, 1, 20, 20), fatal: "below Lambda's minimum of 100"},
		{name: "redeploy counts its own", a: acct(1000, 150), n: needs(10, 1, 20, 20), current: 51, noWarning: true},
		{name: "over the quota", a: acct(1000, 1000), n: needs(600, 350), fatal: "the deploy would fail"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := check(c.a, c.n, c.current)
			if (v.fatal != nil) != (c.fatal != "") || v.fatal != nil && !strings.Contains(v.fatal.Error(), c.fatal) {
				t.Fatalf("fatal = %v, want %q", v.fatal, c.fatal)
			}
			all := strings.Join(v.warnings, "\n")
			for _, w := range c.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q lack %q", all, w)
				}
			}
			if c.noWarning && len(v.warnings) > 0 {
				t.Errorf("unexpected warnings %q", all)
			}
		})
	}
}

func TestNeedsOf(t *testing.T) {
	t.Parallel()
	tpl := `{"Resources":{
		"FnA":{"Type":"AWS::Lambda::Function","Properties":{"ReservedConcurrentExecutions":10}},
		"FnB":{"Type":"AWS::Lambda::Function","Properties":{}},
		"Q":{"Type":"AWS::SQS::Queue","Properties":{}}}}`
	n, err := needsOf([]byte(tpl))
	if err != nil || n.functions != 2 || n.total() != 10 {
		t.Fatalf("needsOf = %+v, %v", n, err)
	}
	if _, err := needsOf([]byte(`{"Resources":{}}`)); err == nil {
		t.Error("a template without functions passed")
	}
	if _, err := needsOf([]byte(`not json`)); err == nil {
		t.Error("garbage passed")
	}
}
