package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
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

// stack is the stand-ins a function runs against: DynamoDB and S3 from
// pkg/localaws, the local E2B runtime, and small EventBridge and Secrets
// Manager servers on loopback. It sets the environment variables the CDK
// stack would, so handlers are built exactly as the mains build them.
type lambdaStack struct {
	t       testing.TB
	runtime *e2blocal.Runtime
	events  *eventBridge
	secrets *secretsManager
	store   *store.Store
	e2bURL  string
}

func newLambdaStack(t testing.TB) *lambdaStack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &lambdaStack{t: t}
	rt, err := e2blocal.Start(ctx, e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), APIKey: e2bKey})
	if err != nil {
		t.Fatalf("start local runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
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

	s.events = newEventBridge(t)
	s.secrets = newSecretsManager(t, map[string]string{secretARN: e2bKey})
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
		"AWS_ENDPOINT_URL_EVENTBRIDGE": s.events.url, "AWS_ENDPOINT_URL_SECRETS_MANAGER": s.secrets.url,
		"AWS_LAMBDA_LOG_LEVEL": "DEBUG",
	} {
		t.Setenv(k, v)
	}
	return s
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

// eventBridge is a loopback EventBridge that keeps what PutEvents sends:
// the project has no EventBridge emulator, and the functions' client must
// still go through the SDK, its endpoint variable and its wire format.
type eventBridge struct {
	url string
	mu  sync.Mutex
	put []putEntry
}

type putEntry struct {
	EventBusName string
	Source       string
	DetailType   string
	Detail       string
}

func newEventBridge(t testing.TB) *eventBridge {
	eb := &eventBridge{}
	srv := httptest.NewServer(awsJSON(t, map[string]func([]byte) (any, int){
		"AWSEvents.PutEvents": func(body []byte) (any, int) {
			var in struct{ Entries []putEntry }
			if err := json.Unmarshal(body, &in); err != nil {
				return map[string]string{"__type": "ValidationException", "message": err.Error()}, http.StatusBadRequest
			}
			eb.mu.Lock()
			defer eb.mu.Unlock()
			var out []map[string]string
			for _, e := range in.Entries {
				eb.put = append(eb.put, e)
				out = append(out, map[string]string{"EventId": "ev-" + strings.Repeat("0", len(eb.put))})
			}
			return map[string]any{"Entries": out, "FailedEntryCount": 0}, http.StatusOK
		},
	}))
	t.Cleanup(srv.Close)
	eb.url = srv.URL
	return eb
}

// entries returns the events of one detail type put so far.
func (eb *eventBridge) entries(detailType string) []putEntry {
	eb.mu.Lock()
	defer eb.mu.Unlock()
	var out []putEntry
	for _, e := range eb.put {
		if e.DetailType == detailType {
			out = append(out, e)
		}
	}
	return out
}

// secretsManager is a loopback Secrets Manager serving fixed secrets.
type secretsManager struct {
	url     string
	mu      sync.Mutex
	reads   int
	secrets map[string]string
}

func newSecretsManager(t testing.TB, secrets map[string]string) *secretsManager {
	sm := &secretsManager{secrets: secrets}
	srv := httptest.NewServer(awsJSON(t, map[string]func([]byte) (any, int){
		"secretsmanager.GetSecretValue": func(body []byte) (any, int) {
			var in struct{ SecretId string }
			_ = json.Unmarshal(body, &in)
			sm.mu.Lock()
			sm.reads++
			v, ok := sm.secrets[in.SecretId]
			sm.mu.Unlock()
			if !ok {
				return map[string]string{"__type": "ResourceNotFoundException", "message": "no secret " + in.SecretId}, http.StatusBadRequest
			}
			return map[string]string{"ARN": in.SecretId, "Name": "e2b", "SecretString": v, "VersionId": "v1"}, http.StatusOK
		},
	}))
	t.Cleanup(srv.Close)
	sm.url = srv.URL
	return sm
}

// set changes a secret's value, as put-secret-value does.
func (sm *secretsManager) set(arn, v string) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.secrets[arn] = v
}

func (sm *secretsManager) count() int {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.reads
}

// awsJSON serves the AWS JSON 1.1 protocol: the operation is the
// X-Amz-Target header, and requests must be signed.
func awsJSON(t testing.TB, ops map[string]func([]byte) (any, int)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		body, _ := io.ReadAll(r.Body)
		op, ok := ops[r.Header.Get("X-Amz-Target")]
		switch {
		case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDLOCAL/"):
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"__type":"UnrecognizedClientException","message":"unsigned request"}`))
			return
		case !ok:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"UnknownOperationException"}`))
			return
		}
		out, status := op(body)
		w.WriteHeader(status)
		if err := json.NewEncoder(w).Encode(out); err != nil {
			t.Errorf("encode %s answer: %v", r.Header.Get("X-Amz-Target"), err)
		}
	})
}
