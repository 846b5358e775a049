package e2e

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// TestDeploymentsShareAnE2BKey runs two deployments of the same tenant name
// (two accounts, or regions) on one E2B key, here one local runtime, each
// with its own table. Tagged as the stack tags them
// (<account>:<region>:<stack>), each one's orphan sweep kills its own
// orphan and neither touches the other's sandboxes. Tagged with the
// tenant's stack name alone, as before, each sweep takes the other's live
// sandbox for an orphan of its own and kills it.
func TestDeploymentsShareAnE2BKey(t *testing.T) {
	e2btest.LocalOnly(t, "two deployments on one runtime")
	for _, tt := range []struct {
		name         string
		idA, idB     string
		crossKills   bool
		wantAOrphans int
	}{
		{"per account and region", "111111111111:eu-west-1:sessionbox-acme", "222222222222:eu-west-1:sessionbox-acme", false, 1},
		{"the tenant's name alone", "sessionbox-acme", "sessionbox-acme", true, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sbx, ddb := sharedKeyParts(t)
			// The Managers' clock, moved past the orphan grace instead of
			// waiting for it; the runtime stamps sandboxes by the real one.
			clock := testclock.New(time.Now())
			newDeployment := func(table, stackID string) *session.Manager {
				if err := store.CreateTable(t.Context(), ddb, table); err != nil {
					t.Fatal(err)
				}
				m, err := session.NewManager(session.Config{Tenant: "acme", StackID: stackID, DisableWorkspaces: true,
					LeaseDuration: time.Second, OrphanGrace: 2 * time.Second},
					session.Deps{Store: store.New(ddb, table), Sandboxes: sbx, Clock: clock,
						Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			a, b := newDeployment("sessions-a", tt.idA), newDeployment("sessions-b", tt.idB)
			k := session.Key{Tenant: "acme", Principal: "alice", SessionID: "chat-1"}
			sa, err := a.Start(t.Context(), k, session.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sb, err := b.Start(t.Context(), k, session.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// A's orphan: a sandbox of its stack that its table does not know.
			orphan, err := sbx.Create(t.Context(), session.SandboxSpec{Template: "base", Timeout: time.Minute,
				Metadata: map[string]string{session.MetaStack: tt.idA, session.MetaTenant: "acme",
					session.MetaPrincipal: "alice", session.MetaSession: "gone"}})
			if err != nil {
				t.Fatal(err)
			}
			clock.Set(time.Now().Add(2500 * time.Millisecond)) // past the orphan grace
			repA, err := a.Reap(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			repB, err := b.Reap(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			live := liveIDs(t, sbx)
			if slices.Contains(live, orphan.ID) || repA.Orphans != tt.wantAOrphans || repB.Errors != 0 {
				t.Errorf("A's sweep: %+v, B's: %+v; live %v, A's orphan %s", repA, repB, live, orphan.ID)
			}
			for who, id := range map[string]string{"A": sa.SandboxID, "B": sb.SandboxID} {
				if killed := !slices.Contains(live, id); killed != tt.crossKills {
					t.Errorf("%s's live sandbox %s killed: %v, want %v (sweeps: A %+v, B %+v)", who, id, killed, tt.crossKills, repA, repB)
				}
			}
		})
	}
}

// sharedKeyParts is one local runtime (one E2B key) and one DynamoDB for
// several deployments.
func sharedKeyParts(t *testing.T) (*sandboxes.E2B, *dynamodb.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rt, err := e2blocal.Start(ctx, e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: t.TempDir(), Agent: e2btest.Agent()})
	if err != nil {
		t.Fatalf("start local runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	client, err := e2b.New(e2b.Config{APIKey: "e2b_0123456789abcdef", APIURL: rt.APIURL(), SandboxURL: rt.SandboxURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	ddbURL, stop, err := localaws.StartDynamoDB(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return sandboxes.New(client), localaws.DynamoDBClient(ddbURL)
}

func liveIDs(t *testing.T, sbx *sandboxes.E2B) []string {
	t.Helper()
	all, err := sbx.List(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID)
	}
	return ids
}
