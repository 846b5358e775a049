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

const keysUsage = `usage: sessionbox keys create|list|revoke [flags] [KEY|PREFIX|HASH]

  create   make a key for --principal of --tenant; it is printed once
  list     every key of the table: prefix, tenant, principal, created, revoked
  revoke   revoke one key, named by the key itself, its prefix or its hash

The table is the deployed stack's (output TableName). AWS credentials and
region come from the usual places (environment, ~/.aws, SSO).`

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
}

func runKeys(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		fmt.Fprintln(stdout, keysUsage)
		return flag.ErrHelp
	}
	if len(args) == 0 || !slices.Contains([]string{"create", "list", "revoke"}, args[0]) {
		fmt.Fprintln(stderr, keysUsage)
		return errors.New("name a subcommand: create, list or revoke")
	}
	sub := args[0]
	var f keysFlags
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.table, "table", "", "the tenant's DynamoDB table [$SESSIONBOX_TABLE]")
	fs.StringVar(&f.tenant, "tenant", "", "the stack's tenant [$SESSIONBOX_TENANT]")
	fs.StringVar(&f.principal, "principal", "", "who the key acts for (create)")
	fs.StringVar(&f.endpoint, "endpoint", "", "DynamoDB endpoint URL, e.g. a local emulator")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := envFlags(fs, getenv, map[string]string{"table": "SESSIONBOX_TABLE", "tenant": "SESSIONBOX_TENANT"}); err != nil {
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
		if fs.NArg() > 0 {
			return fmt.Errorf("create takes no arguments, got %v", fs.Args())
		}
		return createKey(ctx, st, f, stdout, stderr)
	case "list":
		if fs.NArg() > 0 {
			return fmt.Errorf("list takes no arguments, got %v", fs.Args())
		}
		return listKeys(ctx, st, f, stdout)
	default:
		if fs.NArg() != 1 {
			return errors.New("revoke takes one key, prefix or hash")
		}
		return revokeKey(ctx, st, f, fs.Arg(0), stdout)
	}
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
	fmt.Fprintln(stdout, plain)
	fmt.Fprintf(stderr, "created key %s for %s in tenant %s; it is not shown again, keep it now\n", key.Prefix, key.Principal, key.Tenant)
	return nil
}

func listKeys(ctx context.Context, st *store.Store, f keysFlags, stdout io.Writer) error {
	keys, err := st.ListAPIKeys(ctx)
	if err != nil {
		return fmt.Errorf("list keys: %w", err)
	}
	slices.SortFunc(keys, func(a, b *session.APIKey) int { return a.CreatedAt.Compare(b.CreatedAt) })
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
