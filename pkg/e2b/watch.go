package e2b

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// WatchOptions tune Watch.
type WatchOptions struct {
	User string
	// Recursive watches subdirectories too.
	Recursive bool
	// IncludeEntry attaches an EntryInfo to each event (envd >= 0.6.3).
	IncludeEntry bool
	// Timeout ends the watch server-side after this long; zero means the
	// watch lasts until Close or until ctx ends.
	Timeout time.Duration
}

// Watcher streams changes of a directory. Call Close when done.
type Watcher struct {
	stream *connect.ServerStreamForClient[filesystem.WatchDirResponse]
	cancel context.CancelFunc
	sbID   string
}

// Watch starts watching a directory. It returns once envd has confirmed the
// watch, so changes made after Watch returns are reported.
func (f *Filesystem) Watch(ctx context.Context, path string, opts WatchOptions) (*Watcher, error) {
	const op = "files.watch"
	if opts.Recursive {
		if err := f.sb.needEnvd(op, envdRecursiveWatch); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	if opts.Timeout > 0 {
		ctx, cancel = withTimeoutCancel(ctx, cancel, opts.Timeout)
	}
	req := connect.NewRequest(&filesystem.WatchDirRequest{Path: path, Recursive: opts.Recursive, IncludeEntry: opts.IncludeEntry})
	basicUser(req.Header(), f.sb.user(opts.User))
	req.Header().Set("Keepalive-Ping-Interval", keepaliveSeconds)
	timer := f.sb.client.startStreamTimer(cancel)
	stream, err := f.sb.envd.fs.WatchDir(ctx, req)
	if err == nil && !stream.Receive() {
		err = stream.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
	}
	timer.stop()
	if err == nil && stream.Msg().GetStart() == nil {
		err = errors.New("expected start event")
	}
	if err != nil {
		if stream != nil {
			stream.Close()
		}
		cancel()
		if timer.timedOut() {
			return nil, timeoutErr(op, f.sb.ID, err)
		}
		return nil, wrapErr(op, f.sb.ID, err)
	}
	return &Watcher{stream: stream, cancel: cancel, sbID: f.sb.ID}, nil
}

// withTimeoutCancel layers a timeout on ctx and returns a cancel that
// releases both layers.
func withTimeoutCancel(ctx context.Context, outer context.CancelFunc, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, inner := context.WithTimeout(ctx, d)
	return ctx, func() { inner(); outer() }
}

// Next blocks until the next change and returns it. At the end of the watch
// it returns io.EOF; after Close or cancellation, the context error.
func (w *Watcher) Next() (FilesystemEvent, error) {
	for w.stream.Receive() {
		if ev := w.stream.Msg().GetFilesystem(); ev != nil {
			return eventFromPB(ev), nil
		}
	}
	if err := w.stream.Err(); err != nil {
		return FilesystemEvent{}, wrapErr("files.watch", w.sbID, err)
	}
	return FilesystemEvent{}, io.EOF
}

// Close stops the watch and releases its connection.
func (w *Watcher) Close() error {
	w.cancel()
	return w.stream.Close()
}

// keepaliveHeader is the Keepalive-Ping-Interval value in seconds.
func keepaliveHeader(d time.Duration) string {
	if d <= 0 {
		return keepaliveSeconds
	}
	return strconv.Itoa(int(d / time.Second))
}
