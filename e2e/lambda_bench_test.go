package e2e

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/lambdaemu"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/lambdaenvtest"
)

// BenchmarkInit measures a function's init phase the way Lambda reports
// it: from starting the bootstrap to its first GET /invocation/next on the
// Runtime API emulator. The execute function (configuration, AWS clients,
// the E2B key read from a loopback Secrets Manager, the Manager and the
// API router) runs against a hello-world function built the same way, in
// the same run. Each op is one cold start; init-p50-ms and init-p99-ms are
// the figures to read.
func BenchmarkInit(b *testing.B) {
	sm := lambdaenvtest.NewSecretsManager(b, map[string]string{secretARN: e2bKey})
	for k, v := range map[string]string{
		"SESSIONBOX_TENANT": tenant, "SESSIONBOX_TABLE": table, "SESSIONBOX_BUCKET": bucket,
		"SESSIONBOX_EVENT_BUS": eventBus, "SESSIONBOX_E2B_SECRET_ARN": secretARN, "E2B_API_KEY": "",
		"E2B_API_URL": "http://127.0.0.1:9", "E2B_SANDBOX_URL": "http://127.0.0.1:9",
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDLOCAL", "AWS_SECRET_ACCESS_KEY": "local-secret",
		"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9",
		"AWS_ENDPOINT_URL_EVENTBRIDGE": "http://127.0.0.1:9", "AWS_ENDPOINT_URL_SECRETS_MANAGER": sm.URL,
	} {
		b.Setenv(k, v)
	}
	for _, fn := range []struct{ name, pkg string }{
		{"hello", "./testdata/hello"},
		{"execute", "../functions/execute"},
		{"authorizer", "../functions/authorizer"},
	} {
		bin := buildBinary(b, fn.pkg)
		b.Run(fn.name, func(b *testing.B) {
			inits := make([]time.Duration, 0, b.N)
			for b.Loop() {
				inits = append(inits, coldStart(b, bin))
			}
			slices.Sort(inits)
			b.ReportMetric(ms(percentile(inits, 50)), "init-p50-ms")
			b.ReportMetric(ms(percentile(inits, 99)), "init-p99-ms")
		})
	}
}

// coldStart starts bin, waits for its first /next and stops it.
func coldStart(b *testing.B, bin string) time.Duration {
	emu, err := lambdaemu.Start(time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	defer emu.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+emu.Addr())
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	select {
	case <-emu.Ready():
	case <-time.After(30 * time.Second):
		b.Fatal("the function never asked for an invocation")
	}
	return emu.ReadyAt().Sub(start)
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
