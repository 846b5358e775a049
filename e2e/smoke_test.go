package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/apigw"
	"github.com/sessionbox/sessionbox/pkg/lambdaemu"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/smoke"
)

const smokeOrigin = "https://app.example"

// TestSmokeLocalServe runs the smoke suite (pkg/smoke, `sessionbox smoke`)
// against local serve, with a browser origin, a run to completion, a
// silent cell and the per-principal 429.
func TestSmokeLocalServe(t *testing.T) {
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	svc, err := local.Start(ctx, local.Config{
		DataDir: t.TempDir(), Keys: []local.Key{alice}, AllowedOrigins: []string{smokeOrigin},
		// 30 calls per 6 s: the suite's own calls fit, the probe's do not.
		Session: session.Config{RequestRate: session.RequestRate{PerSecond: 5, Burst: 30}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	var log strings.Builder
	// The silent cell is short here: serve has no idle timeout to outlast,
	// the check's path is what is tested.
	err = smoke.Run(ctx, smoke.Config{URL: svc.URL, Key: alice.Secret, Origin: smokeOrigin, Runs: true, RateProbe: 100,
		SilentCell: 2 * time.Second, Log: &log})
	t.Logf("smoke against local serve:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
}

// TestSmokeEmulatedGateway runs the smoke suite against the functions'
// handlers behind the emulated API Gateway (lambdaemu.NewStackGateway:
// the stack's binary media types, transfer modes, routes and REQUEST
// authorizer), each invocation's event and answer serialized as Lambda
// serializes them. Runs are left out: the stand-in EventBridge does not
// deliver to the runs function.
func TestSmokeEmulatedGateway(t *testing.T) {
	t.Setenv("SESSIONBOX_ALLOWED_ORIGINS", smokeOrigin)
	t.Setenv("SESSIONBOX_RATE_PER_SECOND", "5")
	t.Setenv("SESSIONBOX_RATE_BURST", "30")
	s := newLambdaStack(t)
	if err := s.store.PutAPIKey(lambdaCtx(t, "seed"), &session.APIKey{Hash: session.HashAPIKey(replayKey),
		Prefix: replayKey[:8], Tenant: tenant, Principal: "alice", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	fns := map[string]lambdaemu.Invoker{}
	for _, fn := range []lambdaenv.Function{lambdaenv.Start, lambdaenv.Stop, lambdaenv.Execute, lambdaenv.Files, lambdaenv.Status} {
		env, _ := s.env(fn)
		switch fn.Name {
		case "status":
			fns[fn.Name] = bufferedInvoker(env.StatusAPI())
		case "files":
			fns[fn.Name] = bufferedInvoker(env.BufferedAPI())
		default:
			fns[fn.Name] = streamingInvoker(env.StreamingAPI())
		}
	}
	base, err := lambdaenv.InitBase(lambdaenv.Authorizer, lambdaenv.WithLogOutput(&syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	az, err := base.Authorizer()
	if err != nil {
		t.Fatal(err)
	}
	gw := lambdaemu.NewStackGateway(fns, authorizerInvoker(base.AuthorizerHandler(az, io.Discard).Handle))
	gw.AllowedOrigins = []string{smokeOrigin}
	srv := httptest.NewServer(gw)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var log strings.Builder
	err = smoke.Run(ctx, smoke.Config{URL: srv.URL + "/prod", Key: replayKey, Origin: smokeOrigin, RateProbe: 100, Log: &log})
	t.Logf("smoke against the emulated gateway:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
}

// invokerFunc runs an invocation in this process.
type invokerFunc func(ctx context.Context, payload []byte) (lambdaemu.Response, error)

func (f invokerFunc) Invoke(ctx context.Context, payload []byte) (lambdaemu.Response, error) {
	return f(ctx, payload)
}

// handle decodes the event, runs h and encodes its answer as the Lambda
// runtime does; a handler error is an invocation error.
func handle[E, R any](h func(context.Context, E) (R, error), encode func(R) ([]byte, error)) invokerFunc {
	return func(ctx context.Context, payload []byte) (lambdaemu.Response, error) {
		var ev E
		if err := json.Unmarshal(payload, &ev); err != nil {
			return lambdaemu.Response{}, err
		}
		res, err := h(ctx, ev)
		if err != nil {
			return lambdaemu.Response{ErrorType: "errorString", ErrorMessage: err.Error()}, nil
		}
		body, err := encode(res)
		if err != nil {
			return lambdaemu.Response{ErrorType: "Runtime.TruncatedResponse", ErrorMessage: err.Error()}, nil
		}
		return lambdaemu.Response{Body: body}, nil
	}
}

func bufferedInvoker(h apigw.BufferedHandler) invokerFunc {
	return handle(h, func(r events.APIGatewayProxyResponse) ([]byte, error) { return json.Marshal(r) })
}

func streamingInvoker(h apigw.StreamingHandler) invokerFunc {
	return handle(h, func(r *events.APIGatewayProxyStreamingResponse) ([]byte, error) {
		if r == nil {
			return nil, errors.New("no response")
		}
		var b bytes.Buffer
		_, err := io.Copy(&b, r)
		return b.Bytes(), err
	})
}

func authorizerInvoker(h func(context.Context, events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error)) invokerFunc {
	return handle(h, func(r events.APIGatewayCustomAuthorizerResponse) ([]byte, error) { return json.Marshal(r) })
}
