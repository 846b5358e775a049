package session

import (
	"context"
	"path"
	"slices"
	"testing"
	"time"
)

func TestArtifactsFromReportedFiles(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{MaxArtifactBytes: 100})
	ctx := context.Background()
	code := "write /home/user/plot.png PNGDATA\nwrite /home/user/out/data.csv a,b\nwrite /home/user/old.txt old"
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: code}, nil); err != nil {
		t.Fatal(err)
	}
	s := r.store.session(testKey)
	r.clock.Advance(time.Hour)
	start := r.clock.Now()
	past := start.Add(-time.Hour)
	file := func(p string, size int64) FileEntry {
		return FileEntry{Name: path.Base(p), Path: p, Type: "file", Size: size, ModifiedAt: past}
	}
	reported := []FileEntry{
		file("/home/user/plot.png", 7),
		file("/home/user/out/data.csv", 3),
		// Reported files count whatever their time: the provider compared
		// the files before and after, which a clock skew cannot fool.
		file("/home/user/old.txt", 3),
		file("/home/user/.cache/x", 1),
		file("/home/user/a/b/deep.txt", 1),
		file("/tmp/elsewhere", 1),
		file("/home/user", 1),
		file("/home/user/big.bin", 101),
		{Name: "out", Path: "/home/user/out", Type: "dir", ModifiedAt: past},
	}
	cases := []struct {
		name  string
		res   *ExecResult
		lists int
		want  []string
	}{
		{"reported", &ExecResult{ChangedFilesReported: true, ChangedFiles: reported}, 0,
			[]string{"/home/user/old.txt", "/home/user/out/data.csv", "/home/user/plot.png"}},
		{"reported, nothing changed", &ExecResult{ChangedFilesReported: true, ChangedFiles: []FileEntry{}}, 0, nil},
		// Without a report the directory is listed, and the files from an
		// hour ago are not artifacts of an execution begun now.
		{"not reported", &ExecResult{ChangedFiles: reported}, 1, nil},
		{"no result", nil, 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lists := r.sbx.count("ListFiles")
			var got []string
			for _, a := range r.m.artifactsOf(ctx, s, start, c.res) {
				got = append(got, a.Path)
				if a.DownloadURL == "" {
					t.Errorf("artifact without URL: %+v", a)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("artifacts %v, want %v", got, c.want)
			}
			if n := r.sbx.count("ListFiles") - lists; n != c.lists {
				t.Errorf("%d listings, want %d", n, c.lists)
			}
		})
	}
	// The listing path still finds what an execution wrote since start.
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "write /home/user/new.txt n"}, nil); err != nil {
		t.Fatal(err)
	}
	arts := r.m.artifactsOf(ctx, s, start, &ExecResult{})
	if len(arts) != 1 || arts[0].Path != "/home/user/new.txt" || arts[0].SizeBytes != 1 {
		t.Fatalf("listed artifacts %+v", arts)
	}
}

func TestArtifactsFromReportCapped(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{MaxArtifacts: 2})
	ctx := context.Background()
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "write /home/user/c.txt x\nwrite /home/user/a.txt x\nwrite /home/user/b.txt x"}, nil); err != nil {
		t.Fatal(err)
	}
	var files []FileEntry
	for _, n := range []string{"c", "a", "b"} {
		files = append(files, FileEntry{Path: "/home/user/" + n + ".txt", Type: "file", Size: 1})
	}
	arts := r.m.artifactsOf(ctx, r.store.session(testKey), r.clock.Now(), &ExecResult{ChangedFilesReported: true, ChangedFiles: files})
	if len(arts) != 2 || arts[0].Path != "/home/user/a.txt" || arts[1].Path != "/home/user/b.txt" {
		t.Fatalf("artifacts %+v", arts)
	}
}
