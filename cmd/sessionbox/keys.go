package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

var keysUsage = usage{
	name:     "keys",
	synopsis: []string{"create --tenant T --principal P [flags]", "list [--tenant T] [flags]", "revoke KEY|PREFIX|HASH [flags]"},
	about: "Administers the API keys of a deployed stack's table (its TableName output). AWS credentials and\n" +
		"region come from the usual places (environment, ~/.aws, SSO).",
	subs: []sub{
		{"create", "make a key for --principal of --tenant; it is printed once"},
		{"list", "every key of the table: prefix, tenant, principal, created, revoked"},
		{"revoke", "revoke one key, named by the key itself, its prefix or its hash"},
	},
}

func keysCommand() command {
	return command{
		name:    "keys",
		summary: "create, list and revoke API keys in a tenant's table",
		run: func(ctx context.Context, args []string) error {
			return runKeys(ctx, args, os.Getenv, os.Stdout, os.Stderr)
		},
	}
}

type keysFlags struct {
	table, tenant, principal, endpoint string
	json                               bool
}

func runKeys(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var f keysFlags
	fs := newFlags(keysUsage)
	fs.StringVar(&f.table, "table", "", "the tenant's DynamoDB `TABLE` [$SESSIONBOX_TABLE]")
	fs.StringVar(&f.tenant, "tenant", "", "the stack's `TENANT` [$SESSIONBOX_TENANT]")
	fs.StringVar(&f.principal, "principal", "", "with create: who the key acts for, `P`")
	fs.StringVar(&f.endpoint, "endpoint", "", "DynamoDB endpoint `URL`, e.g. a local emulator")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
	args, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(args) > 0 && args[0] == "help" {
		fs.help(stdout)
		return flag.ErrHelp
	}
	if len(args) == 0 || !slices.Contains([]string{"create", "list", "revoke"}, args[0]) {
		return fs.misuse("name a subcommand: create, list or revoke")
	}
	sub, rest := args[0], args[1:]
	switch {
	case sub == "revoke" && len(rest) != 1:
		return fs.misuse("revoke takes one key, prefix or hash")
	case sub != "revoke" && len(rest) > 0:
		return fs.misuse("%s takes no arguments, got %v", sub, rest)
	}
	if err := envFlags(fs.FlagSet, getenv, map[string]string{"table": "SESSIONBOX_TABLE", "tenant": "SESSIONBOX_TENANT"}); err != nil {
		return err
	}
	if f.table == "" {
		return errors.New("--table is required (the stack's TableName output)")
	}
	st, err := keyStore(ctx, f)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		return createKey(ctx, st, f, stdout, stderr)
	case "list":
		return listKeys(ctx, st, f, stdout)
	}
	return revokeKey(ctx, st, f, rest[0], stdout)
}

// keyView is a key as --json shows it: never the key itself, which
// only create prints, once.
type keyView struct {
	Prefix    string     `json:"prefix"`
	Hash      string     `json:"hash"`
	Tenant    string     `json:"tenant"`
	Principal string     `json:"principal"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

func viewKey(k *session.APIKey) keyView {
	v := keyView{Prefix: k.Prefix, Hash: k.Hash, Tenant: k.Tenant, Principal: k.Principal, CreatedAt: k.CreatedAt}
	if k.Revoked() {
		r := k.RevokedAt
		v.RevokedAt = &r
	}
	return v
}

func keyStore(ctx context.Context, f keysFlags) (*store.Store, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if f.endpoint != "" {
			o.BaseEndpoint = aws.String(f.endpoint)
		}
	})
	return store.New(db, f.table), nil
}

func createKey(ctx context.Context, st *store.Store, f keysFlags, stdout, stderr io.Writer) error {
	if f.tenant == "" || f.principal == "" {
		return errors.New("create needs --tenant and --principal")
	}
	plain, key, err := session.NewAPIKey(f.tenant, f.principal, time.Now().UTC())
	if err != nil {
		return err
	}
	if err := st.PutAPIKey(ctx, key); err != nil {
		return fmt.Errorf("store key: %w", err)
	}
	if f.json {
		if err := printJSON(stdout, struct {
			Key string `json:"key"`
			keyView
		}{plain, viewKey(key)}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout, plain)
	}
	fmt.Fprintf(stderr, "created key %s for %s in tenant %s; it is not shown again, keep it now\n", key.Prefix, key.Principal, key.Tenant)
	return nil
}

func listKeys(ctx context.Context, st *store.Store, f keysFlags, stdout io.Writer) error {
	keys, err := st.ListAPIKeys(ctx)
	if err != nil {
		return fmt.Errorf("list keys: %w", err)
	}
	slices.SortFunc(keys, func(a, b *session.APIKey) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if f.json {
		views := []keyView{}
		for _, k := range keys {
			if f.tenant == "" || k.Tenant == f.tenant {
				views = append(views, viewKey(k))
			}
		}
		return printJSON(stdout, struct {
			Keys []keyView `json:"keys"`
		}{views})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tTENANT\tPRINCIPAL\tCREATED\tREVOKED\tHASH")
	for _, k := range keys {
		if f.tenant != "" && k.Tenant != f.tenant {
			continue
		}
		revoked := "-"
		if k.Revoked() {
			revoked = k.RevokedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.Prefix, k.Tenant, k.Principal,
			k.CreatedAt.UTC().Format(time.RFC3339), revoked, k.Hash[:12])
	}
	return tw.Flush()
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// revokeKey finds the key by the key itself, its full hash, or a prefix of
// the key or of its hash that names exactly one key.
func revokeKey(ctx context.Context, st *store.Store, f keysFlags, ref string, stdout io.Writer) error {
	hash, err := resolveKey(ctx, st, f, strings.TrimSpace(ref))
	if err != nil {
		return err
	}
	if err := st.RevokeAPIKey(ctx, hash, time.Now().UTC()); err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return fmt.Errorf("no key %s in the table", ref)
		}
		return fmt.Errorf("revoke key: %w", err)
	}
	if f.json {
		return printJSON(stdout, map[string]string{"revoked": hash})
	}
	fmt.Fprintf(stdout, "revoked %s\n", hash[:12])
	return nil
}

func resolveKey(ctx context.Context, st *store.Store, f keysFlags, ref string) (string, error) {
	switch {
	case ref == "":
		return "", errors.New("name the key to revoke")
	case hashRE.MatchString(ref):
		return ref, nil
	case strings.HasPrefix(ref, session.APIKeyPrefix) && len(ref) > 20:
		// A whole key: revoke it without listing the table.
		return session.HashAPIKey(ref), nil
	}
	keys, err := st.ListAPIKeys(ctx)
	if err != nil {
		return "", fmt.Errorf("list keys: %w", err)
	}
	var found []*session.APIKey
	for _, k := range keys {
		if (f.tenant == "" || k.Tenant == f.tenant) && (strings.HasPrefix(k.Prefix, ref) || strings.HasPrefix(k.Hash, ref)) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no key matches %q", ref)
	case 1:
		return found[0].Hash, nil
	}
	return "", fmt.Errorf("%q matches %d keys; give more of it, or the hash from `keys list`", ref, len(found))
}
