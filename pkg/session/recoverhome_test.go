package session

import (
	"context"
	"testing"
)

// TestRecoverHomeMetadata: with RecoverHomes a session's new sandbox names
// its previous one (and only that: a caller's own value is dropped), so
// the local runtime can give it the previous home; without, nothing does.
func TestRecoverHomeMetadata(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		r := newRig(t, Config{RecoverHomes: on})
		ctx := context.Background()
		first := r.mustStart(t, ctx, testKey, StartOptions{Metadata: map[string]string{MetaRecoverHome: "someone-elses"}})
		if got, ok := r.sbx.specs[0].Metadata[MetaRecoverHome]; ok {
			t.Fatalf("on %v: a first sandbox asked for home %q", on, got)
		}
		r.sbx.vanish(first.SandboxID)
		if _, err := r.m.Stop(ctx, testKey); err != nil {
			t.Fatal(err)
		}
		r.mustStart(t, ctx, testKey, StartOptions{})
		got, ok := r.sbx.specs[1].Metadata[MetaRecoverHome]
		if on && got != first.SandboxID || !on && ok {
			t.Fatalf("on %v: the next sandbox asked for home %q (%v), previous %s", on, got, ok, first.SandboxID)
		}
	}
}
