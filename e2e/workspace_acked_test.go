package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
)

// TestAcknowledgedWritesSurviveServeKilled: N file writes answered 2xx,
// none checkpointed (the checkpoint interval is an hour), then serve is
// killed with SIGKILL and started again on the same data dir: all N are
// readable, and a file deleted before the kill stays deleted (the home
// came back, not the older checkpoint). As root homes are images; serve
// run as another uid keeps them as plain dirs.
func TestAcknowledgedWritesSurviveServeKilled(t *testing.T) {
	t.Parallel()
	const key = "sbx_ackedwrites0123456789abcdef"
	for _, nonRoot := range []bool{false, true} {
		t.Run(map[bool]string{false: "root", true: "not root"}[nonRoot], func(t *testing.T) {
			t.Parallel()
			serve := newServeProc(t, key, "--checkpoint-interval-secs", "3600")
			switch root := os.Geteuid() == 0; {
			case nonRoot && root:
				serve.asUser(t, ackedWritesUID)
			case !nonRoot && !root:
				t.Skip("sandbox homes are images only as root")
			}
			ackedWritesSurvive(t, serve, key)
		})
	}
}

// ackedWritesUID runs the non-root serve: below the runtime's sandbox uid
// range, and not the uid of pkg/e2blocal's unprivileged suite.
const ackedWritesUID = 199998

func ackedWritesSurvive(t *testing.T, serve *serveProc, key string) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c := client.New(serve.URL(), key, nil)
	const sid, n = "acked", 40

	serve.start(t)
	res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "open('gone.txt', 'w').write('x')"}, nil)
	if err != nil || !res.Success {
		t.Fatalf("first write: %+v %v", res, err)
	}
	if _, err := c.Checkpoint(ctx, sid); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	// After the checkpoint: gone.txt deleted, N files written, each 2xx.
	if res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "import os; os.remove('gone.txt')"}, nil); err != nil || !res.Success {
		t.Fatalf("delete: %+v %v", res, err)
	}
	for i := range n {
		body := fmt.Sprintf("write %d", i)
		if _, err := c.WriteFile(ctx, sid, fmt.Sprintf("/home/user/acked/%d.txt", i), strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	serve.kill(t)

	serve.start(t)
	res, err = c.Execute(ctx, sid, client.ExecuteRequest{Code: "import os; print(os.path.exists('gone.txt'))"}, nil)
	if err != nil || !res.Success || !res.Restarted {
		t.Fatalf("after SIGKILL and a new serve: %+v %v", res, err)
	}
	if strings.TrimSpace(res.Stdout) != "False" {
		t.Errorf("a file deleted before the kill is back: %+v", res)
	}
	lost := 0
	for i := range n {
		var got bytes.Buffer
		if _, err := c.Download(ctx, sid, fmt.Sprintf("/home/user/acked/%d.txt", i), &got); err != nil || got.String() != fmt.Sprintf("write %d", i) {
			lost++
			t.Errorf("write %d after the kill: %q %v", i, got.String(), err)
		}
	}
	t.Logf("%d of %d acknowledged writes lost at kill -9", lost, n)
	// The files are the new sandbox user's: it writes where it wrote.
	res, err = c.Execute(ctx, sid, client.ExecuteRequest{Code: "import os; open('acked/new.txt', 'w').write('!'); print(os.stat('acked').st_uid)"}, nil)
	if err != nil || !res.Success || strings.TrimSpace(res.Stdout) != "1000" {
		t.Fatalf("writing into the recovered home: %+v %v", res, err)
	}
}
