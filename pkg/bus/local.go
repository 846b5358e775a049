package bus

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// ErrClosed is returned by a Local bus after Close.
var ErrClosed = errors.New("bus closed")

// Local is the in-process bus of local mode: each "Run Requested" event is
// handed to a worker function on its own goroutine, at most Workers at once,
// the rest waiting in order; "Run Completed" events go to subscribers.
type Local struct {
	handle func(context.Context, session.RunRequested) error
	log    *slog.Logger

	mu        sync.Mutex
	closed    bool
	queue     chan session.RunRequested
	completed []func(session.RunCompleted)
	wg        sync.WaitGroup
	cancel    context.CancelFunc
}

var _ session.Bus = (*Local)(nil)

// NewLocal starts workers goroutines that pass requested runs to handle.
// Handler errors are logged: locally there is no dead-letter queue, and the
// run record already says it failed.
func NewLocal(workers int, handle func(context.Context, session.RunRequested) error, log *slog.Logger) *Local {
	if workers < 1 {
		workers = 1
	}
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Local{handle: handle, log: log, queue: make(chan session.RunRequested, 1024), cancel: cancel}
	for range workers {
		b.wg.Add(1)
		go b.work(ctx)
	}
	return b
}

// SetHandler replaces the worker function; local mode builds the bus before
// the Manager whose ProcessRun it calls.
func (b *Local) SetHandler(handle func(context.Context, session.RunRequested) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handle = handle
}

func (b *Local) work(ctx context.Context) {
	defer b.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-b.queue:
			b.mu.Lock()
			handle := b.handle
			b.mu.Unlock()
			if handle == nil {
				b.log.Error("run requested with no handler", "runId", e.RunID)
				continue
			}
			switch err := handle(ctx, e); {
			case errors.Is(err, session.ErrConflict):
				// A duplicate of a run still in progress: not a failure.
				b.log.Info("run already in progress", "runId", e.RunID)
			case err != nil:
				b.log.Error("run failed", "runId", e.RunID, "error", err)
			}
		}
	}
}

// PublishRunRequested queues the run; it fails with ErrLimit when the queue
// is full rather than blocking the API.
func (b *Local) PublishRunRequested(ctx context.Context, e session.RunRequested) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	select {
	case b.queue <- e:
		return nil
	default:
		return session.Errorf(session.ErrLimit, "too many queued runs")
	}
}

// PublishRunCompleted tells every subscriber.
func (b *Local) PublishRunCompleted(ctx context.Context, e session.RunCompleted) error {
	b.mu.Lock()
	subs := append([]func(session.RunCompleted){}, b.completed...)
	b.mu.Unlock()
	for _, f := range subs {
		f(e)
	}
	return nil
}

// OnRunCompleted subscribes f to "Run Completed" events.
func (b *Local) OnRunCompleted(f func(session.RunCompleted)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.completed = append(b.completed, f)
}

// Close stops the workers; runs in progress see their context cancelled.
func (b *Local) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	// Runs still queued never started; their records say queued. Name
	// them, so whoever stops the service knows which to submit again.
	for {
		select {
		case e := <-b.queue:
			b.log.Warn("run not started before the bus closed", "runId", e.RunID, "sessionId", e.SessionID)
		default:
			return nil
		}
	}
}
