package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestExecuteReportsChangedFiles checks the local kernel's report of the
// files a cell wrote in the working directory reaches the result.
func TestExecuteReportsChangedFiles(t *testing.T) {
	rt := runtime(t)
	a := adapter(t, rt.APIURL(), rt.SandboxURL())
	ctx := context.Background()
	info := create(t, a, nil)
	code := "import os\nopen('/home/user/out.txt', 'w').write('hello')\nos.system('mkdir -p /home/user/d && echo hi > /home/user/d/sub.txt')\nopen('/home/user/.hidden', 'w').write('x')"
	res, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: code}, nil)
	if err != nil || !res.Success {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if !res.ChangedFilesReported {
		t.Fatalf("changed files not reported: %+v", res)
	}
	var got []string
	for _, e := range res.ChangedFiles {
		got = append(got, e.Path)
		if e.Type != "file" || e.ModifiedAt.IsZero() || e.Name != e.Path[strings.LastIndex(e.Path, "/")+1:] {
			t.Errorf("entry %+v", e)
		}
	}
	slices.Sort(got)
	if want := []string{"/home/user/d/sub.txt", "/home/user/out.txt"}; !slices.Equal(got, want) {
		t.Fatalf("changed %v, want %v", got, want)
	}
	res, err = a.Execute(ctx, info.ID, session.ExecRequest{Code: "1+1"}, nil)
	if err != nil || !res.ChangedFilesReported || len(res.ChangedFiles) != 0 {
		t.Fatalf("unchanged tree: %+v, %v", res, err)
	}
}
