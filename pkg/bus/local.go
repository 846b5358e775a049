package bus

import (
	"context"
	"errors"
	"fmt"
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
	ctx       context.Context
	cancel    context.CancelFunc
	journal   *journal // nil: runs live in memory only
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
	b := &Local{handle: handle, log: log, queue: make(chan session.RunRequested, 1024), ctx: ctx, cancel: cancel}
	for range workers {
		b.wg.Add(1)
		go b.work(ctx)
	}
	return b
}

// NewDurableLocal is NewLocal keeping the accepted runs in a journal at
// path: a run PublishRunRequested accepted is on disk before it returns,
// and one a killed process never finished is handed out again by Resume.
func NewDurableLocal(workers int, path string, log *slog.Logger) (*Local, error) {
	j, err := openJournal(path)
	if err != nil {
		return nil, err
	}
	b := NewLocal(workers, nil, log)
	b.journal = j
	return b, nil
}

// Resume queues again the runs the journal's previous process accepted and
// never took up, and passes those it had taken up but not finished to
// interrupted: they are not run twice. Call it once, after SetHandler.
func (b *Local) Resume(interrupted Interrupted) {
	if b.journal == nil {
		return
	}
	pending := b.journal.takePending()
	if len(pending) == 0 {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for _, p := range pending {
			if p.Started {
				if err := interrupted(b.ctx, p.Event); err != nil {
					b.log.Error("record a run interrupted by the last shutdown", "runId", p.Event.RunID, "error", err)
				}
				b.finished(p.Event.RunID)
				continue
			}
			b.log.Info("run accepted before the last shutdown queued again", "runId", p.Event.RunID)
			select {
			case b.queue <- p.Event:
			case <-b.ctx.Done():
				return
			}
		}
	}()
}

func (b *Local) finished(id string) {
	if b.journal == nil {
		return
	}
	if err := b.journal.finished(id); err != nil {
		b.log.Warn("bus journal", "runId", id, "error", err)
	}
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
			if ctx.Err() != nil {
				// Closing: a run not taken up yet stays queued (in the
				// journal, for the next start).
				b.log.Warn("run not started before the bus closed", "runId", e.RunID, "sessionId", e.SessionID)
				continue
			}
			b.mu.Lock()
			handle := b.handle
			b.mu.Unlock()
			if handle == nil {
				b.log.Error("run requested with no handler", "runId", e.RunID)
				continue
			}
			if b.journal != nil {
				if err := b.journal.started(e.RunID); err != nil {
					b.log.Warn("bus journal", "runId", e.RunID, "error", err)
				}
			}
			// Once handle returns, the run's record says how it ended
			// (cut off by Close, it says failed); only a process killed
			// meanwhile leaves a run taken up and not finished.
			err := handle(ctx, e)
			b.finished(e.RunID)
			switch {
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
	if len(b.queue) == cap(b.queue) {
		return session.Errorf(session.ErrLimit, "too many queued runs")
	}
	if b.journal != nil {
		if err := b.journal.accepted(e); err != nil {
			return fmt.Errorf("keep the run: %w", err)
		}
	}
	select {
	case b.queue <- e:
		return nil
	default:
		// Full since the check (a Resume filling it): the journal has it;
		// the next start queues it.
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
	if b.journal != nil {
		// Queued runs stay in the journal for the next start.
		return b.journal.close()
	}
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
