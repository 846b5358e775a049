package e2b

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestRunCodeChangedFiles(t *testing.T) {
	mod := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	cases := []struct {
		name     string
		lines    []string
		reported bool
		want     []EntryInfo
	}{
		{"reported", []string{
			`{"type":"files_changed","root":"/home/user","files":[{"path":"/home/user/a.png","size":12,"modified":"2026-01-02T03:04:05.000000006Z"},{"path":"/home/user/d/b.csv","size":0,"modified":"2026-01-02T03:04:05.000000006Z"}],"complete":true}`,
		}, true, []EntryInfo{
			{Name: "a.png", Path: "/home/user/a.png", Type: FileTypeFile, Size: 12, ModifiedTime: mod},
			{Name: "b.csv", Path: "/home/user/d/b.csv", Type: FileTypeFile, ModifiedTime: mod},
		}},
		{"nothing changed", []string{`{"type":"files_changed","root":"/home/user","files":[],"complete":true}`}, true, []EntryInfo{}},
		{"not sent", nil, false, nil},
		{"incomplete", []string{`{"type":"files_changed","root":"/home/user","files":[{"path":"/home/user/a","size":1,"modified":"2026-01-02T03:04:05Z"}],"complete":false}`}, false, nil},
		{"no root", []string{`{"type":"files_changed","files":[],"complete":true}`}, false, nil},
		{"malformed list", []string{`{"type":"files_changed","root":"/home/user","files":[{"path":"/home/user/a","modified":"yesterday"}],"complete":true}`}, false, nil},
		{"unknown types beside it", []string{`{"type":"something_new","files":7}`, `{"type":"files_changed","root":"/home/user","files":[],"complete":true}`}, true, []EntryInfo{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-ndjson")
				_, _ = io.WriteString(w, `{"type":"number_of_executions","execution_count":1}`+"\n")
				_, _ = io.WriteString(w, `{"type":"result","is_main_result":true,"text":"2"}`+"\n")
				for _, l := range c.lines {
					_, _ = io.WriteString(w, l+"\n")
				}
				_, _ = io.WriteString(w, `{"type": "end_of_execution"}`+"\n")
			})
			exec, err := interpSandbox(t, h, nil).RunCode(context.Background(), "1+1", RunCodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if exec.Text() != "2" || exec.ExecutionCount != 1 {
				t.Errorf("exec = %+v", exec)
			}
			dir := ""
			if c.reported {
				dir = "/home/user"
			}
			if exec.ChangedFilesReported != c.reported || !reflect.DeepEqual(exec.ChangedFiles, c.want) || exec.ChangedFilesDir != dir {
				t.Errorf("changed files %+v (reported %v), want %+v (%v)", exec.ChangedFiles, exec.ChangedFilesReported, c.want, c.reported)
			}
		})
	}
}
