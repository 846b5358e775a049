package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// lambdaPayloadLimit is the most a synchronous Lambda invocation's request
// or response may hold.
const lambdaPayloadLimit = 6 << 20

// TestReplayInlineFilesNearTheLimit writes and reads a 4.4 MB binary file
// inline through the files function's handler, each event and response
// small enough for Lambda once base64-encoded, and has a 4.6 MB one, which
// still fits an event, refused both ways with a 413 that names the limit and
// the presigned routes.
func TestReplayInlineFilesNearTheLimit(t *testing.T) {
	s := newLambdaStack(t)
	start, _ := s.env(lambdaenv.Start)
	files, _ := s.env(lambdaenv.Files)
	res, err := start.BufferedAPI()(lambdaCtx(t, "start"), loadEvent[events.APIGatewayProxyRequest](t, "start/start-code-interpreter.json"))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("start: %v %v", res.StatusCode, err)
	}
	withPath := func(file, path string, body []byte) events.APIGatewayProxyRequest {
		ev := loadEvent[events.APIGatewayProxyRequest](t, file)
		ev.QueryStringParameters["path"] = path
		ev.MultiValueQueryStringParameters["path"] = []string{path}
		if body != nil {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
		return ev
	}
	fits := func(t *testing.T, what string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > lambdaPayloadLimit {
			t.Fatalf("the %s is %d bytes, over Lambda's %d", what, len(b), lambdaPayloadLimit)
		}
	}
	invoke := func(t *testing.T, ev events.APIGatewayProxyRequest) answer {
		t.Helper()
		fits(t, "request event", ev)
		res, err := files.BufferedAPI()(lambdaCtx(t, "files"), ev)
		if err != nil {
			t.Fatal(err)
		}
		fits(t, "response", res)
		body := []byte(res.Body)
		if res.IsBase64Encoded {
			if body, err = base64.StdEncoding.DecodeString(res.Body); err != nil {
				t.Fatal(err)
			}
		}
		return answer{status: res.StatusCode, header: header(res.Headers, res.MultiValueHeaders), body: body}
	}

	t.Run("4.4 MB written and read inline", func(t *testing.T) {
		data := make([]byte, 4_400_000)
		_, _ = rand.Read(data)
		a := invoke(t, withPath("files/write-content.json", "big.bin", data))
		a.ok(t, http.StatusOK)
		if e := a.json(t); e["size"] != float64(len(data)) {
			t.Fatalf("write: %s", a.body)
		}
		a = invoke(t, withPath("files/read-content.json", "big.bin", nil))
		a.ok(t, http.StatusOK)
		if !bytes.Equal(a.body, data) {
			t.Fatalf("read %d bytes back, not the %d written", len(a.body), len(data))
		}
	})
	t.Run("4.6 MB written is refused", func(t *testing.T) {
		data := make([]byte, 4_600_000)
		_, _ = rand.Read(data)
		p := invoke(t, withPath("files/write-content.json", "bigger.bin", data)).problem(t, http.StatusRequestEntityTooLarge)
		if d, _ := p["detail"].(string); !strings.Contains(d, "4500000 bytes") || !strings.Contains(d, "files/upload-url") {
			t.Fatalf("problem %v", p)
		}
	})
	t.Run("4.6 MB read is refused", func(t *testing.T) {
		key := session.Key{Tenant: tenant, Principal: "alice", SessionID: "chat-42"}
		r, err := files.Manager.Execute(lambdaCtx(t, "exec"), key,
			session.ExecRequest{Code: "import os\nopen('/home/user/made.bin', 'wb').write(os.urandom(4600000))"}, nil)
		if err != nil || !r.Success {
			t.Fatalf("%+v %v", r, err)
		}
		p := invoke(t, withPath("files/read-content.json", "made.bin", nil)).problem(t, http.StatusRequestEntityTooLarge)
		if d, _ := p["detail"].(string); !strings.Contains(d, "4500000 bytes") || !strings.Contains(d, "files/download-url") {
			t.Fatalf("problem %v", p)
		}
	})
}
