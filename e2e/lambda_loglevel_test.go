package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
)

// TestMetricsSurviveStrictestLogLevel runs the real authorizer bootstrap
// with the strictest application log level the stack offers (FATAL) and
// its output filtered as Lambda filters it (lambdaemu.LogFilter): the
// refusal's metric line still reaches the logs, so the authorizer alarms
// keep their data whatever level an operator picks.
func TestMetricsSurviveStrictestLogLevel(t *testing.T) {
	bin := buildBinary(t, "../functions/authorizer")
	newLambdaStack(t)
	t.Setenv("AWS_LAMBDA_LOG_LEVEL", "FATAL")
	emu, logs := runFunctionLogs(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	payload, err := os.ReadFile(filepath.Join(eventsDir, "authorizer/unknown-key.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := emu.Invoke(ctx, payload); err != nil {
		t.Fatal(err)
	}
	// The line is written before the answer; the pipe from the process
	// may deliver it a little later.
	var line string
	for ctx.Err() == nil {
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, `"_aws"`) {
				line = l
			}
		}
		if line != "" {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	if line == "" {
		t.Fatalf("at FATAL no metric line reached the logs; kept:\n%s", logs.String())
	}
	authCounted(t, []byte(line), lambdaenv.MetricAuthRefusals)
}
