package e2b_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
)

// rawSandbox sends hand-built requests to the local runtime's sandbox URL:
// the baseline the client is measured against.
type rawSandbox struct {
	hc    *http.Client
	base  string
	id    string
	token string
}

func newRaw(b *testing.B, sb *e2b.Sandbox) *rawSandbox {
	e2btest.LocalOnly(b, "the baseline sends requests straight to the local runtime")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	b.Cleanup(tr.CloseIdleConnections)
	return &rawSandbox{hc: &http.Client{Transport: tr}, base: local.SandboxURL(), id: sb.ID, token: sb.AccessToken()}
}

func (r *rawSandbox) do(b *testing.B, method, path, port string, body io.Reader, ctype string) *http.Response {
	req, err := http.NewRequestWithContext(context.Background(), method, r.base+path, body)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("E2b-Sandbox-Id", r.id)
	req.Header.Set("E2b-Sandbox-Port", port)
	req.Header.Set("X-Access-Token", r.token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	// Without this net/http asks for gzip, and envd would compress every
	// download: the client avoids that, so the baseline does too.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := r.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.Fatalf("%s %s: %s %s", method, path, resp.Status, msg)
	}
	return resp
}

func benchSandbox(b *testing.B, template string) (*e2b.Sandbox, *rawSandbox) {
	c := newClient(b)
	sb := newSandbox(b, c, e2b.CreateParams{Template: template})
	return sb, newRaw(b, sb)
}

func BenchmarkRunCode(b *testing.B) {
	sb, raw := benchSandbox(b, "code-interpreter-v1")
	ctx := context.Background()
	if _, err := sb.RunCode(ctx, "0", e2b.RunCodeOptions{}); err != nil { // start the kernel outside the timings
		b.Fatal(err)
	}
	b.Run("client", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			exec, err := sb.RunCode(ctx, "1 + 1", e2b.RunCodeOptions{})
			if err != nil || exec.Text() != "2" {
				b.Fatalf("%+v, %v", exec, err)
			}
		}
	})
	b.Run("rawHTTP", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp := raw.do(b, http.MethodPost, "/execute", "49999", strings.NewReader(`{"code":"1 + 1"}`), "application/json")
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			ended := false
			for sc.Scan() {
				if bytes.Contains(sc.Bytes(), []byte(`"end_of_execution"`)) {
					ended = true
				}
			}
			resp.Body.Close()
			if !ended {
				b.Fatal("no end_of_execution")
			}
		}
	})
}

var fileSizes = []struct {
	name string
	size int
}{{"1KiB", 1 << 10}, {"16MiB", 16 << 20}}

func BenchmarkFileWrite(b *testing.B) {
	sb, raw := benchSandbox(b, "base")
	ctx := context.Background()
	for _, fs := range fileSizes {
		data := bytes.Repeat([]byte("0123456789abcdef"), fs.size/16)
		b.Run(fs.name+"/client", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(fs.size))
			for b.Loop() {
				if _, err := sb.Files().Write(ctx, "bench.bin", bytes.NewReader(data), e2b.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fs.name+"/rawHTTP", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(fs.size))
			for b.Loop() {
				resp := raw.do(b, http.MethodPost, "/files?path=bench.bin", "49983", bytes.NewReader(data), "application/octet-stream")
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

func BenchmarkFileRead(b *testing.B) {
	sb, raw := benchSandbox(b, "base")
	ctx := context.Background()
	for _, fs := range fileSizes {
		path := "read-" + fs.name + ".bin"
		data := bytes.Repeat([]byte("0123456789abcdef"), fs.size/16)
		if _, err := sb.Files().Write(ctx, path, bytes.NewReader(data), e2b.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		b.Run(fs.name+"/client", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(fs.size))
			for b.Loop() {
				rc, err := sb.Files().Read(ctx, path, e2b.ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, rc)
				rc.Close()
				if err != nil || n != int64(fs.size) {
					b.Fatalf("read %d, %v", n, err)
				}
			}
		})
		b.Run(fs.name+"/rawHTTP", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(fs.size))
			for b.Loop() {
				resp := raw.do(b, http.MethodGet, "/files?path="+url.QueryEscape(path), "49983", nil, "")
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if n != int64(fs.size) {
					b.Fatalf("read %d", n)
				}
			}
		})
	}
}
