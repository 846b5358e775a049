package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkExecuteOverhead measures what the API adds to an execute: HTTP,
// auth, decoding, validation, logging and encoding, over a Manager that
// answers at once.
func BenchmarkExecuteOverhead(b *testing.B) {
	for _, accept := range []string{"application/json", contentTypeNDJSON} {
		b.Run(accept, func(b *testing.B) {
			h := newHarness(b)
			client := h.srv.Client()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req, _ := http.NewRequest("POST", h.srv.URL+"/v1/sessions/s1/execute", strings.NewReader(`{"code":"print('hi')\n1+1"}`))
				req.Header.Set("Authorization", "Bearer "+keyAlice)
				req.Header.Set("Accept", accept)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
