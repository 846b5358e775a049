package localaws

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
	"github.com/truora/minidyn/server"

	"github.com/sessionbox/sessionbox/pkg/inprocess"
)

// DynamoDBOption configures StartDynamoDB.
type DynamoDBOption func(*dynamoConfig)

type dynamoConfig struct {
	dataDir   string
	saveEvery time.Duration
	logger    *slog.Logger
}

// WithDataDir keeps the tables in dir: they are loaded at start, each
// write is journaled before it is answered, and a snapshot is taken a
// moment after each change and at stop. Without it data lives in memory.
func WithDataDir(dir string) DynamoDBOption {
	return func(c *dynamoConfig) { c.dataDir = dir }
}

// WithLogger sets where failed saves are reported (default slog.Default).
func WithLogger(l *slog.Logger) DynamoDBOption {
	return func(c *dynamoConfig) {
		if l != nil {
			c.logger = l
		}
	}
}

// DynamoDB is minidyn's DynamoDB-compatible API in this process, with no
// port: its clients call the handler through an in-memory transport, so no
// other process on the machine can reach the tables.
type DynamoDB struct {
	h     http.Handler
	close func()
	once  sync.Once
}

// NewDynamoDB starts the emulator; Close stops it (and saves the tables
// when WithDataDir was given).
func NewDynamoDB(ctx context.Context, opts ...DynamoDBOption) (*DynamoDB, error) {
	cfg := dynamoConfig{saveEvery: time.Second, logger: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	md := server.NewServer()
	if cfg.dataDir == "" {
		return &DynamoDB{h: md, close: func() {}}, nil
	}
	p, err := openPersistent(ctx, md, cfg.dataDir)
	if err != nil {
		return nil, err
	}
	saverCtx, cancelSaver := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { p.saveLoop(saverCtx, cfg.saveEvery, cfg.logger) })
	final := func() {
		cancelSaver()
		wg.Wait()
		if err := p.saveIfDirty(context.Background()); err != nil {
			cfg.logger.Error("localaws: final save of the DynamoDB tables failed", "err", err)
		}
		_ = p.journal.Close()
	}
	return &DynamoDB{h: p, close: final}, nil
}

// inProcessHost is the host of the in-process emulator's clients' URLs.
const inProcessHost = "dynamodb.in-process"

// Client returns an SDK client that reaches the emulator in process. It
// skips the SDK's per-call work that only a remote DynamoDB needs: it sends
// unsigned requests (the emulator checks no signature, and no other party
// can reach it), resolves its one endpoint without the rules engine, and
// does not checksum responses that never crossed a network. Every request
// still goes through the SDK's serializers, retries and error mapping,
// exactly as the production store's does.
func (d *DynamoDB) Client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	inProcess := func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: inprocess.Transport{Handler: d.h}}
		o.Credentials = aws.AnonymousCredentials{}
		o.EndpointResolverV2 = fixedEndpoint{}
		o.DisableValidateResponseChecksum = true
	}
	return DynamoDBClient("http://"+inProcessHost, append([]func(*dynamodb.Options){inProcess}, optFns...)...)
}

// fixedEndpoint resolves every operation to the in-process endpoint.
type fixedEndpoint struct{}

func (fixedEndpoint) ResolveEndpoint(context.Context, dynamodb.EndpointParameters) (smithyendpoints.Endpoint, error) {
	return smithyendpoints.Endpoint{URI: url.URL{Scheme: "http", Host: inProcessHost}}, nil
}

// Close stops the emulator; calls after the first do nothing.
func (d *DynamoDB) Close() { d.once.Do(d.close) }

// StartDynamoDB serves the emulator on a free 127.0.0.1 port until stop is
// called or ctx ends, for tests that need a DynamoDB endpoint (fault
// injection between client and server, other processes).
func StartDynamoDB(ctx context.Context, opts ...DynamoDBOption) (endpoint string, stop func(), err error) {
	d, err := NewDynamoDB(ctx, opts...)
	if err != nil {
		return "", nil, err
	}
	return serve(ctx, "dynamodb", "", d.h, d.Close)
}

// DynamoDBClient returns an SDK client for a local endpoint, signing with
// placeholder credentials: no local DynamoDB checks them (minidyn checks
// none, dynalite only that a signature is there), so they are no secret.
// optFns adjust it further (tests tune retries).
func DynamoDBClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("placeholder", "placeholder", ""),
	}, optFns...)
}

// saveLoop saves changes every interval until ctx ends. A failure is
// logged when it starts or changes, and the recovery once: a full disk
// makes every tick fail, which said once a second only buries the cause.
func (p *persistentDB) saveLoop(ctx context.Context, every time.Duration, log *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var failing string
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			err := p.saveIfDirty(ctx)
			switch {
			case err != nil && err.Error() != failing:
				// The changes stay marked; the next tick tries again.
				failing = err.Error()
				log.Warn("localaws: saving the DynamoDB tables failed; retrying every tick, the journal holds the writes meanwhile", "err", failing)
			case err == nil && failing != "":
				failing = ""
				log.Info("localaws: saving the DynamoDB tables works again")
			}
		}
	}
}
