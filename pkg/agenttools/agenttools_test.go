package agenttools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// fakeBackend answers execute and install; everything else fails.
type fakeBackend struct {
	exec    func(req session.ExecRequest) (*session.ExecResult, error)
	install session.InstallRequest
}

var errUnused = errors.New("not used by this test")

func (f *fakeBackend) Execute(_ context.Context, _ string, req session.ExecRequest, _ func(session.Event)) (*session.ExecResult, error) {
	return f.exec(req)
}

func (f *fakeBackend) Install(_ context.Context, _ string, req session.InstallRequest) (*session.InstallResult, error) {
	f.install = req
	return &session.InstallResult{Success: true, Stdout: "Successfully installed tabulate-0.9.0\n"}, nil
}
func (f *fakeBackend) Reset(context.Context, string) error { return errUnused }
func (f *fakeBackend) ListFiles(context.Context, string, string, int) ([]session.FileEntry, error) {
	return nil, errUnused
}
func (f *fakeBackend) OpenFile(context.Context, string, string) (io.ReadCloser, int64, error) {
	return nil, 0, errUnused
}
func (f *fakeBackend) WriteFile(context.Context, string, string, []byte) (session.FileEntry, error) {
	return session.FileEntry{}, errUnused
}
func (f *fakeBackend) DeleteFile(context.Context, string, string) error { return errUnused }
func (f *fakeBackend) UploadURLs(context.Context, string, []string, string) (*session.URLUploadResult, error) {
	return nil, errUnused
}
func (f *fakeBackend) RunCommand(context.Context, string, session.CommandRequest, func(session.Event)) (*session.CommandResult, error) {
	return nil, errUnused
}
func (f *fakeBackend) StartCommand(context.Context, string, session.CommandRequest) (*session.CommandStarted, error) {
	return nil, errUnused
}
func (f *fakeBackend) ReadCommand(context.Context, string, string, time.Duration) (*session.CommandOutput, error) {
	return nil, errUnused
}
func (f *fakeBackend) KillCommand(context.Context, string, string) error { return errUnused }

func TestSeedTools(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n....")
	f := &fakeBackend{exec: func(req session.ExecRequest) (*session.ExecResult, error) {
		switch req.Code {
		case "boom":
			return &session.ExecResult{Error: &session.ExecError{Name: "NameError", Value: "boom", Traceback: "NameError: name 'boom' is not defined"}}, nil
		case "chart":
			return &session.ExecResult{Success: true, Results: []session.Result{{PNG: base64.StdEncoding.EncodeToString(png)}}}, nil
		}
		return &session.ExecResult{Success: true, Stdout: "ran " + req.Code + "\n", Results: []session.Result{{Text: "42", IsMainResult: true}}}, nil
	}}
	ctx := context.Background()
	kit, err := NewWithBackend(ctx, f, "s1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close() })
	tools := kit.Tools()
	if len(tools) != 2 || tools[0].Name != "execute_python" || tools[1].Name != "install_packages" {
		t.Fatalf("tools %+v", tools)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(tools[0].InputSchema, &schema); err != nil || schema.Type != "object" ||
		len(schema.Required) != 1 || schema.Required[0] != "code" || schema.Properties["timeoutSecs"] == nil {
		t.Fatalf("execute_python schema %s", tools[0].InputSchema)
	}
	for _, tc := range []struct {
		name, tool, args string
		isError          bool
		text             string
		images           int
	}{
		{"value", "execute_python", `{"code":"x"}`, false, "ran x", 0},
		{"exception", "execute_python", `{"code":"boom"}`, true, "NameError", 0},
		{"chart", "execute_python", `{"code":"chart"}`, false, "", 1},
		{"missing code", "execute_python", `{}`, true, "code", 0},
		{"install", "install_packages", `{"packages":["tabulate==0.9.0"]}`, false, "Installed tabulate==0.9.0", 0},
	} {
		tool := tools[0]
		if tc.tool == "install_packages" {
			tool = tools[1]
		}
		res, err := tool.Call(ctx, json.RawMessage(tc.args))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.IsError != tc.isError || !strings.Contains(res.Text, tc.text) || len(res.Images) != tc.images {
			t.Fatalf("%s: %+v", tc.name, res)
		}
		if tc.images > 0 && (res.Images[0].MIMEType != "image/png" || string(res.Images[0].Data) != string(png)) {
			t.Fatalf("%s: image %+v", tc.name, res.Images[0])
		}
	}
	if f.install.Packages[0] != "tabulate==0.9.0" {
		t.Fatalf("install got %+v", f.install)
	}
	if _, err := tools[0].Call(ctx, json.RawMessage(`[1]`)); err == nil {
		t.Fatal("arguments that are not an object were taken")
	}
}

func TestUnknownTool(t *testing.T) {
	t.Parallel()
	_, err := NewWithBackend(context.Background(), &fakeBackend{}, "s1", "execute_python", "rm_rf")
	if err == nil || !strings.Contains(err.Error(), `"rm_rf"`) || !strings.Contains(err.Error(), "read_file") {
		t.Fatalf("err %v", err)
	}
}
