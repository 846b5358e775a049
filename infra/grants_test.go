package main

import (
	"regexp"
	"strings"
	"testing"
)

// objectPrefix picks "prefix/*" out of a bucket ARN joined with it.
var objectPrefix = regexp.MustCompile(`TransferBucket[0-9A-F]*","Arn"\]\},"/([a-z-]+/\*)"\]\]\}$`)

func checkGrants(t *testing.T, s synthed, v variant) {
	tableID, _ := s.only(t, "AWS::DynamoDB::GlobalTable")
	for name, want := range expectedActions() {
		if !v.guards {
			want = join(want, xrayActions) // tracing on
		}
		st := s.grants(t, name)
		if got := actionsOf(st); !equal(got, want) {
			t.Errorf("%s may do\n  %v\nwant exactly\n  %v", name, got, want)
		}
		for _, x := range withAction(st, "dynamodb:GetItem") {
			if !strings.Contains(strings.Join(x.resources, ","), tableID) {
				t.Errorf("%s: table actions on %v, not the stack's table", name, x.resources)
			}
		}
		for _, x := range withAction(st, "secretsmanager:GetSecretValue") {
			r := strings.Join(x.resources, ",")
			if v.importedName != "" && !strings.Contains(r, ":secret:"+v.importedName+"-??????") {
				t.Errorf("%s: imported secret granted on %s", name, r)
			}
			if v.importedName == "" && !strings.Contains(r, `"Ref":"E2BApiKey`) {
				t.Errorf("%s: created secret granted on %s", name, r)
			}
		}
	}
}

func checkGrantScopes(t *testing.T, s synthed) {
	t.Run("authorizer reads API key items only", func(t *testing.T) {
		st := withAction(s.grants(t, "authorizer"), "dynamodb:GetItem")
		if len(st) != 1 {
			t.Fatalf("%d GetItem statements", len(st))
		}
		like, _ := st[0].condition["ForAllValues:StringLike"].(map[string]any)
		if jsonOf(like["dynamodb:LeadingKeys"]) != `["KEY#*"]` {
			t.Errorf("authorizer GetItem condition %s", jsonOf(st[0].condition))
		}
	})
	t.Run("reaper queries the deadline index", func(t *testing.T) {
		found := false
		for _, x := range withAction(s.grants(t, "reaper"), "dynamodb:Query") {
			found = found || strings.Contains(strings.Join(x.resources, ","), "/index/byDeadline")
		}
		if !found {
			t.Error("reaper has no Query on index/byDeadline")
		}
	})
	t.Run("object grants stay under their prefixes", func(t *testing.T) {
		want := map[string][]string{
			"execute": {"artifacts/*"}, "mcp": {"artifacts/*"}, "files": {"transfers/*", "downloads/*"}, "runs": {"runs/*", "artifacts/*"},
			"stop": {"workspaces/*"}, "reaper": {"workspaces/*"},
		}
		for name, prefixes := range want {
			var got []string
			for _, x := range withAction(s.grants(t, name), "s3:PutObject") {
				for _, r := range x.resources {
					m := objectPrefix.FindStringSubmatch(r)
					if m == nil {
						t.Errorf("%s: object grant on %s, not a prefix of the bucket", name, r)
						continue
					}
					got = append(got, m[1])
				}
			}
			if !equal(sorted(got...), sorted(prefixes...)) {
				t.Errorf("%s: object grants on %v, want %v", name, got, prefixes)
			}
		}
		for _, name := range []string{"start", "execute", "install", "fetch", "files", "mcp", "runs"} {
			var got []string
			for _, x := range withAction(s.grants(t, name), "s3:GetObject") {
				if len(withAction([]stmt{x}, "s3:PutObject")) == 0 {
					for _, r := range x.resources {
						if m := objectPrefix.FindStringSubmatch(r); m != nil {
							got = append(got, m[1])
						}
					}
				}
			}
			if !equal(got, []string{"workspaces/*"}) {
				t.Errorf("%s: read-only object grants on %v, want workspaces/* (to restore)", name, got)
			}
		}
		st := withAction(s.grants(t, "files"), "s3:ListBucket")
		if len(st) != 1 {
			t.Fatalf("files: %d ListBucket statements", len(st))
		}
		// S3 turns a missing key's 403 into 404 only for a caller with
		// ListBucket on the bucket, checked with no prefix: a condition on
		// s3:prefix would never hold for HeadObject.
		if len(st[0].condition) != 0 {
			t.Errorf("files: ListBucket condition %s", jsonOf(st[0].condition))
		}
		reads := withAction(s.grants(t, "status"), "s3:GetObject")
		if len(reads) != 1 || len(reads[0].resources) != 1 || objectPrefix.FindStringSubmatch(reads[0].resources[0]) == nil ||
			objectPrefix.FindStringSubmatch(reads[0].resources[0])[1] != "runs/*" {
			t.Errorf("status: GetObject %+v, want on runs/* only", reads)
		}
	})
	t.Run("events only of the function's own detail type", func(t *testing.T) {
		busID, _ := s.only(t, "AWS::Events::EventBus")
		for name, dt := range map[string]string{"execute": "Run Requested", "runs": "Run Completed"} {
			st := withAction(s.grants(t, name), "events:PutEvents")
			if len(st) != 1 {
				t.Fatalf("%s: %d PutEvents statements", name, len(st))
			}
			eq, _ := st[0].condition["StringEquals"].(map[string]any)
			if eq["events:source"] != "sessionbox" || eq["events:detail-type"] != dt {
				t.Errorf("%s: PutEvents condition %s", name, jsonOf(st[0].condition))
			}
			if !strings.Contains(strings.Join(st[0].resources, ","), busID) {
				t.Errorf("%s: PutEvents on %v, not the tenant bus", name, st[0].resources)
			}
		}
	})
	t.Run("logs only to the function's own group", func(t *testing.T) {
		for _, name := range functionNames {
			_, fn := s.function(t, name)
			lg := ref(fn["LoggingConfig"].(map[string]any)["LogGroup"])
			for _, x := range withAction(s.grants(t, name), "logs:PutLogEvents") {
				if len(x.resources) != 1 || !strings.Contains(x.resources[0], lg) {
					t.Errorf("%s: logs granted on %v, want only %s", name, x.resources, lg)
				}
			}
		}
	})
}
