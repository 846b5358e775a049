package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetricsCommand: metrics prints the newest sample, --samples every
// one, --json the API's answer; a session without a sandbox is an error
// carrying the problem.
func TestMetricsCommand(t *testing.T) {
	const answer = `{"timestamp":"2026-01-02T03:04:05Z","cpuCount":2,"cpuUsedPct":37.5,"memUsedBytes":268435456,"memTotalBytes":1073741824,"diskUsedBytes":1048576,"diskTotalBytes":10737418240,` +
		`"samples":[{"timestamp":"2026-01-02T03:04:00Z","cpuCount":2,"cpuUsedPct":12,"memUsedBytes":134217728,"memTotalBytes":1073741824,"diskUsedBytes":1048576,"diskTotalBytes":10737418240},` +
		`{"timestamp":"2026-01-02T03:04:05Z","cpuCount":2,"cpuUsedPct":37.5,"memUsedBytes":268435456,"memTotalBytes":1073741824,"diskUsedBytes":1048576,"diskTotalBytes":10737418240}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && r.URL.Path == "/v1/sessions/demo/sandbox/metrics" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, answer)
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"type":"https://sessionbox.dev/problems/not-found","title":"Not found","status":404,"detail":"session \"idle\" has no sandbox"}`)
	}))
	defer srv.Close()
	env := map[string]string{"SESSIONBOX_URL": srv.URL, "SESSIONBOX_API_KEY": "sbx_test_0123456789"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		args   []string
		stdout []string
		err    string
	}{
		{[]string{"--session", "demo"}, []string{"sampled  2026-01-02T03:04:05Z", "cpu      37.5% of 2", "memory   256.0 MiB of 1.0 GiB", "disk     1.0 MiB of 10.0 GiB"}, ""},
		{[]string{"--session", "demo", "--samples"}, []string{"2026-01-02T03:04:00Z  12.0   128.0 MiB", "2026-01-02T03:04:05Z  37.5   256.0 MiB"}, ""},
		{[]string{"--session", "demo", "--json"}, []string{`"cpuUsedPct": 37.5`, `"samples": [`}, ""},
		{[]string{"--session", "idle"}, nil, `session "idle" has no sandbox`},
		{[]string{"--session", "demo", "extra"}, nil, `unexpected argument "extra"`},
	}
	for _, tc := range cases {
		var err error
		stdout, _ := captureOutput(t, func() { err = runMetrics(context.Background(), tc.args, getenv) })
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Fatalf("%v: err %v, want %q", tc.args, err, tc.err)
		}
		for _, want := range tc.stdout {
			if !strings.Contains(stdout, want) {
				t.Fatalf("%v printed %q, which lacks %q", tc.args, stdout, want)
			}
		}
	}
}
