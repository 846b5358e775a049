package main

import (
	"sort"
	"strings"
	"testing"
)

// stmt is one IAM statement found anywhere in the template.
type stmt struct {
	owner     string // logical id of the resource holding it
	effect    string
	actions   []string
	notAction bool
	resources []string // JSON of each resource entry
	condition map[string]any
	principal any
}

// statements walks every property of every resource and returns each policy
// statement it finds: identity policies, role trust policies, bucket and
// queue policies, whatever CDK added.
func (s synthed) statements() []stmt {
	var out []stmt
	for id, r := range s.res {
		walkStatements(id, r["Properties"], &out)
	}
	return out
}

func walkStatements(owner string, v any, out *[]stmt) {
	switch x := v.(type) {
	case map[string]any:
		if list, ok := x["Statement"].([]any); ok {
			for _, e := range list {
				if m, ok := e.(map[string]any); ok {
					*out = append(*out, toStmt(owner, m))
				}
			}
		}
		for _, e := range x {
			walkStatements(owner, e, out)
		}
	case []any:
		for _, e := range x {
			walkStatements(owner, e, out)
		}
	}
}

func toStmt(owner string, m map[string]any) stmt {
	s := stmt{owner: owner, principal: m["Principal"]}
	s.effect, _ = m["Effect"].(string)
	if a, ok := m["NotAction"]; ok {
		s.actions, s.notAction = strs(a), true
	} else {
		s.actions = strs(m["Action"])
	}
	switch r := m["Resource"].(type) {
	case []any:
		for _, e := range r {
			s.resources = append(s.resources, jsonOf(e))
		}
	case nil:
	default:
		s.resources = []string{jsonOf(r)}
	}
	s.condition, _ = m["Condition"].(map[string]any)
	return s
}

// tlsOnlyDeny is the one shape a wildcard may take: Deny everything to
// requests that do not use TLS (enforceSSL on the bucket and the queue).
func tlsOnlyDeny(s stmt) bool {
	b, _ := s.condition["Bool"].(map[string]any)
	return s.effect == "Deny" && b != nil && b["aws:SecureTransport"] == "false" && len(s.condition) == 1
}

// checkNoWildcards: no Allow statement anywhere names a wildcard action, uses
// NotAction, or grants "*" as resource; Lambda permissions name one action.
func checkNoWildcards(t *testing.T, s synthed) {
	t.Helper()
	all := s.statements()
	if len(all) < 20 {
		t.Fatalf("found only %d policy statements; the walk is broken", len(all))
	}
	for _, st := range all {
		if st.notAction {
			t.Errorf("%s: NotAction %v", st.owner, st.actions)
		}
		for _, a := range st.actions {
			if !strings.ContainsAny(a, "*?") {
				continue
			}
			if !tlsOnlyDeny(st) {
				t.Errorf("%s: %s statement with wildcard action %q", st.owner, st.effect, a)
			}
		}
		if st.effect == "Allow" && !xrayOnly(st) {
			for _, r := range st.resources {
				if r == `"*"` {
					t.Errorf("%s: Allow %v on every resource", st.owner, st.actions)
				}
			}
		}
	}
	for id, p := range s.ofType("AWS::Lambda::Permission") {
		if a := props(p)["Action"]; a != "lambda:InvokeFunction" {
			t.Errorf("%s: permission action %v", id, a)
		}
	}
}

// xrayOnly: X-Ray's write calls have no resource-level permissions, so
// tracing needs them on "*" (and nothing else may be).
func xrayOnly(st stmt) bool {
	return equal(sorted(st.actions...), xrayActions)
}

// grants returns the statements of the policies attached to a function's
// role, and fails if the role has managed policies or inline ones.
func (s synthed) grants(t *testing.T, fnName string) []stmt {
	t.Helper()
	_, fn := s.function(t, fnName)
	role := ref(fn["Role"])
	roleRes, ok := s.res[role]
	if !ok {
		t.Fatalf("%s: role %q not in template", fnName, role)
	}
	if mp := props(roleRes)["ManagedPolicyArns"]; mp != nil {
		t.Errorf("%s: role has managed policies %v", fnName, jsonOf(mp))
	}
	if ip := props(roleRes)["Policies"]; ip != nil {
		t.Errorf("%s: role has inline policies %v", fnName, jsonOf(ip))
	}
	var out []stmt
	for id, p := range s.ofType("AWS::IAM::Policy") {
		for _, r := range props(p)["Roles"].([]any) {
			if ref(r) == role {
				walkStatements(id, props(p)["PolicyDocument"], &out)
			}
		}
	}
	return out
}

// actionsOf is every action a function's role allows, sorted, deduplicated.
func actionsOf(st []stmt) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range st {
		if s.effect != "Allow" {
			continue
		}
		for _, a := range s.actions {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

// withAction returns the statements that allow an action.
func withAction(st []stmt, action string) []stmt {
	var out []stmt
	for _, s := range st {
		for _, a := range s.actions {
			if a == action && s.effect == "Allow" {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

var (
	logActions    = []string{"logs:CreateLogStream", "logs:PutLogEvents"}
	tableActions  = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}
	secretActions = []string{"secretsmanager:GetSecretValue"}
	objectActions = []string{"s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"}
	xrayActions   = []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}
)

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return sorted(out...)
}

// expectedActions is, per function, exactly what its role may do.
func expectedActions() map[string][]string {
	return map[string][]string{
		"start":      join(logActions, tableActions, secretActions, []string{"s3:GetObject"}),
		"stop":       join(logActions, tableActions, secretActions, objectActions, []string{"s3:DeleteObject", "s3:ListBucket"}),
		"status":     join(logActions, tableActions, secretActions, []string{"s3:GetObject"}),
		"install":    join(logActions, tableActions, secretActions, []string{"s3:GetObject"}),
		"fetch":      join(logActions, tableActions, secretActions, []string{"s3:GetObject"}),
		"execute":    join(logActions, tableActions, secretActions, objectActions, []string{"events:PutEvents"}),
		"mcp":        join(logActions, tableActions, secretActions, objectActions),
		"files":      join(logActions, tableActions, secretActions, objectActions, []string{"s3:ListBucket"}),
		"runs":       join(logActions, tableActions, secretActions, objectActions, []string{"events:PutEvents", "sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}),
		"reaper":     join(logActions, tableActions, secretActions, objectActions, []string{"s3:DeleteObject", "s3:ListBucket"}),
		"authorizer": join(logActions, []string{"dynamodb:GetItem"}),
	}
}
