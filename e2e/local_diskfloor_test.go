package e2e

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/local"
)

// TestDiskFloor: while the data dir's file system has less free space than
// the floor, requests that would start a sandbox or store an upload get
// 507 with a problem saying so (the S3 stand-in refuses a presigned upload
// too), reads keep working, and all works again once space is back.
func TestDiskFloor(t *testing.T) {
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	var free atomic.Uint64
	free.Store(100 << 30)
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice},
		MinFreeBytes: 1 << 30,
		Statfs:       func(string) (uint64, uint64, error) { return free.Load(), 200 << 30, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	base := svc.URL + "/v1/sessions/s1"
	if code, res := call(t, "POST", base+"/execute", alice.Secret, `{"code":"1"}`); code != http.StatusOK {
		t.Fatalf("execute with space: %d %v", code, res)
	}
	code, ticket := call(t, "POST", base+"/files/upload-url", alice.Secret, `{"path":"big.bin","sizeBytes":5}`)
	if code != http.StatusOK {
		t.Fatalf("upload-url with space: %d %v", code, ticket)
	}

	free.Store(100 << 20)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/execute", `{"code":"1"}`},
		{"POST", "/sandbox/start", `{}`},
		{"PUT", "/files/content?path=a.txt", "hello"},
		{"POST", "/files/upload-url", `{"path":"b.bin","sizeBytes":5}`},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), c.method, strings.Replace(base, "s1", "s2", 1)+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+alice.Secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusInsufficientStorage || resp.Header.Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(string(b), "below the floor of 1024 MiB") {
			t.Fatalf("%s %s with 100 MiB free: %d %s", c.method, c.path, resp.StatusCode, b)
		}
	}
	// The presigned upload made earlier is refused by the S3 stand-in.
	put, _ := http.NewRequestWithContext(t.Context(), "PUT", ticket["uploadUrl"].(string), bytes.NewReader([]byte("12345")))
	for k, v := range ticket["headers"].(map[string]any) {
		put.Header.Set(k, v.(string))
	}
	resp, err := http.DefaultClient.Do(put)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct{ Code string }
	_ = xml.Unmarshal(b, &e)
	if resp.StatusCode != http.StatusInsufficientStorage || e.Code != "InsufficientStorage" {
		t.Fatalf("presigned PUT with 100 MiB free: %d %s", resp.StatusCode, b)
	}
	// Reads and health stay up.
	if code, _ := call(t, "GET", svc.URL+"/healthz", "", ""); code != http.StatusOK {
		t.Fatalf("healthz = %d", code)
	}
	if code, res := call(t, "GET", base+"/files?path=.", alice.Secret, ""); code != http.StatusOK {
		t.Fatalf("list with low space: %d %v", code, res)
	}

	free.Store(100 << 30)
	if code, res := call(t, "POST", strings.Replace(base, "s1", "s2", 1)+"/execute", alice.Secret, `{"code":"1"}`); code != http.StatusOK {
		t.Fatalf("execute once space is back: %d %v", code, res)
	}
}
