package localaws

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"
)

// DynamoDBOption configures StartDynamoDB.
type DynamoDBOption func(*dynamoConfig)

type dynamoConfig struct {
	dataDir   string
	saveEvery time.Duration
	logger    *slog.Logger
}

// WithDataDir keeps the tables in dir: they are loaded at start and saved
// a moment after each change and at stop. Without it data lives in memory.
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

// StartDynamoDB serves minidyn's DynamoDB-compatible API on a free
// 127.0.0.1 port until stop is called or ctx ends.
func StartDynamoDB(ctx context.Context, opts ...DynamoDBOption) (endpoint string, stop func(), err error) {
	cfg := dynamoConfig{saveEvery: time.Second, logger: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	md := server.NewServer()
	if cfg.dataDir == "" {
		return serve(ctx, "dynamodb", md, nil)
	}
	p, err := openPersistent(ctx, md, cfg.dataDir)
	if err != nil {
		return "", nil, err
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
	}
	return serve(ctx, "dynamodb", p, final)
}

// DynamoDBClient returns an SDK client for a local endpoint, signing with
// static dummy credentials. optFns adjust it further (tests tune retries).
func DynamoDBClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, ""),
	}, optFns...)
}

// saveLoop saves changes every interval until ctx ends.
func (p *persistentDB) saveLoop(ctx context.Context, every time.Duration, log *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := p.saveIfDirty(ctx); err != nil {
				// The changes stay marked; the next tick tries again.
				log.Warn("localaws: saving the DynamoDB tables failed", "err", fmt.Sprint(err))
			}
		}
	}
}
