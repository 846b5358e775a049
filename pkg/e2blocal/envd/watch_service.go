//go:build linux

package envd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// maxBufferedWatchEvents bounds a polled watcher's backlog; beyond it the
// oldest events are dropped.
const maxBufferedWatchEvents = 10_000

func (f *filesystemService) WatchDir(ctx context.Context, req *connect.Request[filesystem.WatchDirRequest], stream *connect.ServerStream[filesystem.WatchDirResponse]) error {
	m := req.Msg
	d, err := f.s.openWatch(ctx, watchOptions{m.GetPath(), m.GetRecursive(), m.GetIncludeEntry(), m.GetAllowNetworkMounts()})
	if err != nil {
		return err
	}
	defer d.close()
	if err := stream.Send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Start{Start: &filesystem.WatchDirResponse_StartEvent{}}}); err != nil {
		return fmt.Errorf("send start event: %w", err)
	}
	interval := keepaliveInterval(req.Header())
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.s.ctx.Done():
			return connect.NewError(connect.CodeUnavailable, errServerClosed)
		case <-timer.C:
			ka := &filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Keepalive{Keepalive: &filesystem.WatchDirResponse_KeepAlive{}}}
			if err := stream.Send(ka); err != nil {
				return fmt.Errorf("send keepalive: %w", err)
			}
		case err, ok := <-d.w.Errors:
			if !ok {
				return connect.NewError(connect.CodeInternal, errWatchClosed)
			}
			return connect.NewError(connect.CodeInternal, fmt.Errorf("watcher error: %w", err))
		case e, ok := <-d.w.Events:
			if !ok {
				return connect.NewError(connect.CodeInternal, errWatchClosed)
			}
			for _, ev := range d.translate(e) {
				if err := stream.Send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Filesystem{Filesystem: ev}}); err != nil {
					return fmt.Errorf("send filesystem event: %w", err)
				}
			}
		}
		timer.Reset(interval)
	}
}

// watcherTable holds the polled watchers of CreateWatcher.
type watcherTable struct {
	mu     sync.Mutex
	byID   map[string]*polledWatcher
	closed bool
}

func newWatcherTable() *watcherTable {
	return &watcherTable{byID: map[string]*polledWatcher{}}
}

type polledWatcher struct {
	d      *dirWatch
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []*filesystem.FilesystemEvent
	err    error
}

func (t *watcherTable) add(w *polledWatcher) (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("watcher id: %w", err)
	}
	id := hex.EncodeToString(b[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return "", errServerClosed
	}
	t.byID[id] = w
	return id, nil
}

func (t *watcherTable) get(id string) (*polledWatcher, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.byID[id]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("watcher with id %s not found", id))
	}
	return w, nil
}

func (t *watcherTable) remove(id string) (*polledWatcher, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.byID[id]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("watcher with id %s not found", id))
	}
	delete(t.byID, id)
	return w, nil
}

func (t *watcherTable) closeAll() {
	t.mu.Lock()
	t.closed = true
	all := t.byID
	t.byID = map[string]*polledWatcher{}
	t.mu.Unlock()
	for _, w := range all {
		w.stop()
	}
}

func (w *polledWatcher) stop() {
	w.cancel()
	<-w.done
}

// collect buffers events until the watcher is removed or fails.
func (w *polledWatcher) collect(ctx context.Context) {
	defer close(w.done)
	defer w.d.close()
	for {
		select {
		case <-ctx.Done():
			return
		case err, ok := <-w.d.w.Errors:
			if !ok {
				err = errWatchClosed
			}
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		case e, ok := <-w.d.w.Events:
			if !ok {
				return
			}
			evs := w.d.translate(e)
			w.mu.Lock()
			w.events = append(w.events, evs...)
			if over := len(w.events) - maxBufferedWatchEvents; over > 0 {
				w.events = append([]*filesystem.FilesystemEvent(nil), w.events[over:]...)
			}
			w.mu.Unlock()
		}
	}
}

func (f *filesystemService) CreateWatcher(reqCtx context.Context, req *connect.Request[filesystem.CreateWatcherRequest]) (*connect.Response[filesystem.CreateWatcherResponse], error) {
	m := req.Msg
	d, err := f.s.openWatch(reqCtx, watchOptions{m.GetPath(), m.GetRecursive(), m.GetIncludeEntry(), m.GetAllowNetworkMounts()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(f.s.ctx)
	w := &polledWatcher{d: d, cancel: cancel, done: make(chan struct{})}
	id, err := f.s.watchers.add(w)
	if err != nil {
		cancel()
		d.close()
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	if !f.s.spawn(func() { w.collect(ctx) }) {
		cancel()
		d.close()
		_, _ = f.s.watchers.remove(id)
		return nil, connect.NewError(connect.CodeUnavailable, errServerClosed)
	}
	return connect.NewResponse(&filesystem.CreateWatcherResponse{WatcherId: id}), nil
}

func (f *filesystemService) GetWatcherEvents(_ context.Context, req *connect.Request[filesystem.GetWatcherEventsRequest]) (*connect.Response[filesystem.GetWatcherEventsResponse], error) {
	w, err := f.s.watchers.get(req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	events, werr := w.events, w.err
	w.events = nil
	w.mu.Unlock()
	if len(events) == 0 && werr != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("watcher failed: %w", werr))
	}
	return connect.NewResponse(&filesystem.GetWatcherEventsResponse{Events: events}), nil
}

func (f *filesystemService) RemoveWatcher(_ context.Context, req *connect.Request[filesystem.RemoveWatcherRequest]) (*connect.Response[filesystem.RemoveWatcherResponse], error) {
	w, err := f.s.watchers.remove(req.Msg.GetWatcherId())
	if err != nil {
		return nil, err
	}
	w.stop()
	return connect.NewResponse(&filesystem.RemoveWatcherResponse{}), nil
}
