package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// keysTable starts the DynamoDB emulator with a sessionbox table and
// points the default AWS configuration at throwaway credentials.
func keysTable(t *testing.T) (endpoint string, st *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	endpoint, stop, err := localaws.StartDynamoDB(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	db := localaws.DynamoDBClient(endpoint)
	if err := store.CreateTable(ctx, db, "sessionbox-acme"); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDLOCAL",
		"AWS_SECRET_ACCESS_KEY": "local-secret", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
		"AWS_PROFILE": "", "SESSIONBOX_TABLE": "", "SESSIONBOX_TENANT": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_DYNAMODB": ""} {
		t.Setenv(k, v)
	}
	return endpoint, store.New(db, "sessionbox-acme")
}

// noEnv is an environment without a variable.
func noEnv(string) string { return "" }

func keys(t *testing.T, endpoint string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append(args[:1:1], append([]string{"--table", "sessionbox-acme", "--endpoint", endpoint}, args[1:]...)...)
	err = runKeys(context.Background(), full, noEnv, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestKeysCreateListRevoke(t *testing.T) {
	endpoint, st := keysTable(t)
	ctx := context.Background()

	plain, notice, err := keys(t, endpoint, "create", "--tenant", "acme", "--principal", "alice")
	if err != nil {
		t.Fatal(err)
	}
	plain = strings.TrimSpace(plain)
	if !strings.HasPrefix(plain, "sbx_") || strings.Contains(notice, plain) {
		t.Fatalf("create printed %q, notice %q", plain, notice)
	}
	k, err := st.GetAPIKey(ctx, session.HashAPIKey(plain))
	if err != nil || k.Tenant != "acme" || k.Principal != "alice" || k.Revoked() {
		t.Fatalf("stored key %+v (%v)", k, err)
	}
	other, _, err := keys(t, endpoint, "create", "--tenant", "acme", "--principal", "bob")
	if err != nil {
		t.Fatal(err)
	}
	other = strings.TrimSpace(other)

	list, _, err := keys(t, endpoint, "list")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(list, plain) || !strings.Contains(list, plain[:10]) || !strings.Contains(list, "alice") ||
		!strings.Contains(list, "bob") || strings.Count(list, "\n") != 3 {
		t.Fatalf("list:\n%s", list)
	}

	// By prefix: alice's only.
	if _, _, err := keys(t, endpoint, "revoke", plain[:10]); err != nil {
		t.Fatal(err)
	}
	if k, _ := st.GetAPIKey(ctx, session.HashAPIKey(plain)); !k.Revoked() {
		t.Fatal("alice's key not revoked")
	}
	if k, _ := st.GetAPIKey(ctx, session.HashAPIKey(other)); k.Revoked() {
		t.Fatal("bob's key revoked too")
	}
	list, _, _ = keys(t, endpoint, "list")
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "alice") && strings.Contains(line, " - ") {
			t.Fatalf("alice's key listed as valid:\n%s", list)
		}
	}
	// By the whole key.
	if _, _, err := keys(t, endpoint, "revoke", other); err != nil {
		t.Fatal(err)
	}
	if k, _ := st.GetAPIKey(ctx, session.HashAPIKey(other)); !k.Revoked() {
		t.Fatal("bob's key not revoked")
	}
}

func TestKeysErrors(t *testing.T) {
	endpoint, st := keysTable(t)
	ctx := context.Background()
	for _, p := range []string{"alice", "bob"} {
		_, k, err := session.NewAPIKey("acme", p, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		k.Prefix = "sbx_same00" // two keys sharing a prefix
		if err := st.PutAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no principal", []string{"create", "--tenant", "acme"}, "--principal"},
		{"bad principal", []string{"create", "--tenant", "acme", "--principal", "a#b"}, "principal"},
		{"ambiguous prefix", []string{"revoke", "sbx_same"}, "matches 2 keys"},
		{"unknown prefix", []string{"revoke", "sbx_nope"}, "no key matches"},
		{"unknown key", []string{"revoke", "sbx_" + strings.Repeat("a", 43)}, "no key"},
		{"nothing to revoke", []string{"revoke"}, "one key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := keys(t, endpoint, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	if err := runKeys(ctx, []string{"list"}, noEnv, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--table") {
		t.Fatalf("list without a table: %v", err)
	}
	if err := runKeys(ctx, []string{"rotate"}, noEnv, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Fatal("unknown subcommand accepted")
	}
}

// TestKeysFlagsFromEnvironment: --table and --tenant come from
// SESSIONBOX_TABLE and SESSIONBOX_TENANT when not given, and a flag wins.
func TestKeysFlagsFromEnvironment(t *testing.T) {
	endpoint, st := keysTable(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{"from the environment", map[string]string{"SESSIONBOX_TABLE": "sessionbox-acme", "SESSIONBOX_TENANT": "acme"}, nil, ""},
		{"flags win", map[string]string{"SESSIONBOX_TABLE": "no-such-table", "SESSIONBOX_TENANT": "other"},
			[]string{"--table", "sessionbox-acme", "--tenant", "acme"}, ""},
		{"neither", nil, nil, "--table is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"create", "--principal", "carol", "--endpoint", endpoint}, c.args...)
			err := runKeys(ctx, args, func(k string) string { return c.env[k] }, &out, &errOut)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			k, err := st.GetAPIKey(ctx, session.HashAPIKey(strings.TrimSpace(out.String())))
			if err != nil || k.Tenant != "acme" || k.Principal != "carol" {
				t.Fatalf("stored key %+v (%v)", k, err)
			}
		})
	}
}

// TestKeysJSONAndFlagsAfterArguments: flags may follow the subcommand's
// argument, and --json prints create's key with its record, list's
// records (never a key itself) and revoke's hash.
func TestKeysJSONAndFlagsAfterArguments(t *testing.T) {
	endpoint, _ := keysTable(t)
	out, _, err := keys(t, endpoint, "create", "--tenant", "acme", "--principal", "dave", "--json")
	var created struct {
		Key, Prefix, Hash, Tenant, Principal string
	}
	if err != nil || json.Unmarshal([]byte(out), &created) != nil || !strings.HasPrefix(created.Key, "sbx_") ||
		created.Hash != session.HashAPIKey(created.Key) || created.Principal != "dave" {
		t.Fatalf("create --json: %q %v", out, err)
	}
	var errOut bytes.Buffer
	var revoked bytes.Buffer
	err = runKeys(context.Background(), []string{"revoke", created.Prefix, "--table", "sessionbox-acme", "--endpoint", endpoint, "--json"}, noEnv, &revoked, &errOut)
	if err != nil || !strings.Contains(revoked.String(), `"revoked": "`+created.Hash+`"`) {
		t.Fatalf("revoke PREFIX --flags: %q %v %s", revoked.String(), err, errOut.String())
	}
	out, _, err = keys(t, endpoint, "list", "--json")
	var list struct {
		Keys []struct {
			Hash      string
			RevokedAt *time.Time
		}
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Keys) != 1 || list.Keys[0].Hash != created.Hash ||
		list.Keys[0].RevokedAt == nil || strings.Contains(out, created.Key) {
		t.Fatalf("list --json: %q %v", out, err)
	}
}
