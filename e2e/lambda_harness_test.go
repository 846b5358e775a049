package e2e

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/lambdaenvtest"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/store"
)

const (
	tenant    = "acme"
	table     = "sessionbox-acme"
	bucket    = "sessionbox-acme-transfers"
	eventBus  = "sessionbox-acme"
	secretARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sessionbox/acme/e2b-api-key-AbCdEf"
	e2bKey    = "e2b_0123456789abcdef0123456789abcdef"
)

// lambdaStack is the stand-ins a function runs against: DynamoDB and S3 from
// pkg/localaws, the local E2B runtime, and small EventBridge and Secrets
// Manager servers on loopback. It sets the environment variables the CDK
// stack would, so handlers are built exactly as the mains build them.
type lambdaStack struct {
	t       testing.TB
	runtime *e2blocal.Runtime
	events  *lambdaenvtest.EventBridge
	secrets *lambdaenvtest.SecretsManager
	store   *store.Store
	e2bURL  string
}

func newLambdaStack(t testing.TB) *lambdaStack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &lambdaStack{t: t}
	rt := lambdaRuntime(t)
	s.runtime, s.e2bURL = rt, rt.APIURL()

	dbURL, stopDB, err := localaws.StartDynamoDB(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopDB)
	db := localaws.DynamoDBClient(dbURL)
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	s.store = store.New(db, table)

	// The functions sign with the environment's credentials, as in Lambda.
	s3URL, stopS3, err := localaws.StartS3(context.Background(), t.TempDir(), localaws.WithS3Credentials("AKIDLOCAL", "local-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopS3)
	admin := localaws.S3Client(s3URL, func(o *s3.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local-secret", "")
	})
	if err := localaws.EnsureBucket(ctx, admin, bucket); err != nil {
		t.Fatal(err)
	}

	s.events = lambdaenvtest.NewEventBridge(t)
	s.secrets = lambdaenvtest.NewSecretsManager(t, map[string]string{secretARN: e2bKey})
	for k, v := range map[string]string{
		"SESSIONBOX_TENANT": tenant, "SESSIONBOX_TABLE": table, "SESSIONBOX_BUCKET": bucket,
		"SESSIONBOX_EVENT_BUS": eventBus, "SESSIONBOX_E2B_SECRET_ARN": secretARN,
		"SESSIONBOX_DLQ_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/sessionbox-acme-runs-dlq",
		"E2B_API_KEY":        "", "E2B_API_URL": rt.APIURL(), "E2B_SANDBOX_URL": rt.SandboxURL(),
		// The local runtime's sandboxes have no network.
		"SESSIONBOX_ALLOW_INTERNET_ACCESS": "false",
		"AWS_REGION":                       "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDLOCAL", "AWS_SECRET_ACCESS_KEY": "local-secret",
		"AWS_SESSION_TOKEN": "", "AWS_ENDPOINT_URL": "",
		"AWS_ENDPOINT_URL_DYNAMODB": dbURL, "AWS_ENDPOINT_URL_S3": s3URL,
		"AWS_ENDPOINT_URL_EVENTBRIDGE": s.events.URL, "AWS_ENDPOINT_URL_SECRETS_MANAGER": s.secrets.URL,
		"AWS_LAMBDA_LOG_LEVEL": "DEBUG",
	} {
		t.Setenv(k, v)
	}
	return s
}

// sharedLambdaRuntime is the local runtime the function tests share,
// started by the first of them: a runtime of each test's own cost about a
// second. The tests set the environment (t.Setenv), so they never run in
// parallel, and each kills every sandbox it leaves (lambdaRuntime): the
// next finds the runtime empty, as a fresh one would be.
var sharedLambdaRuntime = sync.OnceValues(func() (*e2blocal.Runtime, error) {
	dir, err := os.MkdirTemp("", "e2e-functions-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := e2blocal.Start(ctx, e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: dir, APIKey: e2bKey})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	atExit(func() {
		_ = rt.Close()
		_ = os.RemoveAll(dir)
	})
	return rt, nil
})

// lambdaRuntime is the shared runtime, emptied of sandboxes when t ends.
func lambdaRuntime(t testing.TB) *e2blocal.Runtime {
	t.Helper()
	rt, err := sharedLambdaRuntime()
	if err != nil {
		t.Fatalf("start local runtime: %v", err)
	}
	t.Cleanup(func() { killEverySandbox(t, rt) })
	return rt
}

// killEverySandbox kills every sandbox of rt, running or paused.
func killEverySandbox(t testing.TB, rt *e2blocal.Runtime) {
	c, err := e2b.New(e2b.Config{APIKey: e2bKey, APIURL: rt.APIURL(), SandboxURL: rt.SandboxURL()})
	if err != nil {
		t.Errorf("empty the shared runtime: %v", err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for sb, err := range c.List(ctx, e2b.ListParams{}) {
		if err != nil {
			t.Errorf("empty the shared runtime: list: %v", err)
			return
		}
		if err := c.Kill(ctx, sb.SandboxID); err != nil && !errors.Is(err, e2b.ErrSandboxNotFound) {
			t.Errorf("empty the shared runtime: kill %s: %v", sb.SandboxID, err)
		}
	}
}

// env builds fn's handlers the way its main does.
func (s *lambdaStack) env(fn lambdaenv.Function, opts ...lambdaenv.Option) (*sessionenv.Env, *syncBuffer) {
	s.t.Helper()
	logs := &syncBuffer{}
	env, err := sessionenv.Init(context.Background(), fn, append([]lambdaenv.Option{lambdaenv.WithLogOutput(logs)}, opts...)...)
	if err != nil {
		s.t.Fatalf("init %s: %v", fn.Name, err)
	}
	s.t.Cleanup(func() {
		_ = env.Close()
		if s.t.Failed() {
			s.t.Logf("%s logs:\n%s", fn.Name, logs.String())
		}
	})
	return env, logs
}

// syncBuffer collects log lines written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
