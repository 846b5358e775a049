package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
)

// TestReplayJSONModeStartsWhileRunning runs a JSON-mode execute through the
// execute function's streaming handler with code that waits for a file:
// the prelude (status 200) and whitespace arrive while the code still
// waits, and only then does the test write the file that lets it finish.
// The body is then one JSON value with the result.
func TestReplayJSONModeStartsWhileRunning(t *testing.T) {
	s := newLambdaStack(t)
	start, _ := s.env(lambdaenv.Start)
	execute, _ := s.env(lambdaenv.Execute)
	res, err := start.BufferedAPI()(lambdaCtx(t, "start"), loadEvent[events.APIGatewayProxyRequest](t, "start/start-code-interpreter.json"))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("start: %v %v", res.StatusCode, err)
	}
	var sess struct{ SandboxID string }
	if err := json.Unmarshal([]byte(res.Body), &sess); err != nil || sess.SandboxID == "" {
		t.Fatalf("start body %s", res.Body)
	}
	ev := loadEvent[events.APIGatewayProxyRequest](t, "execute/execute.json")
	ev.Body = `{"code": "import os, time\nwhile not os.path.exists('/home/user/go'):\n    time.sleep(0.1)\n6 * 7"}`
	stream, err := execute.StreamingAPI()(lambdaCtx(t, "exec"), ev)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stream)
	var prelude []byte
	for !bytes.HasSuffix(prelude, make([]byte, 8)) {
		b, err := br.ReadByte()
		if err != nil {
			t.Fatalf("stream ended before its prelude: %v (%q)", err, prelude)
		}
		prelude = append(prelude, b)
	}
	var p struct{ StatusCode int }
	if err := json.Unmarshal(bytes.TrimRight(prelude, "\x00"), &p); err != nil || p.StatusCode != http.StatusOK {
		t.Fatalf("prelude %q: %v", prelude, err)
	}
	if b, err := br.ReadByte(); err != nil || b != ' ' {
		t.Fatalf("first body byte %q %v, want a space", b, err)
	}
	// Still running: only now may it end.
	if err := execute.Sandboxes.WriteFile(lambdaCtx(t, "go"), sess.SandboxID, "/home/user/go", strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Success bool
		Results []struct{ Text string }
	}
	if err := json.Unmarshal(rest, &r); err != nil || !r.Success || len(r.Results) != 1 || r.Results[0].Text != "42" {
		t.Fatalf("body %q: %v", rest, err)
	}
}
