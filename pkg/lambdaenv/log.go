package lambdaenv

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// NewLogger is the functions' logger: one JSON object per line, which Lambda's
// JSON log format keeps as is, each record carrying the invocation's request
// id as awsRequestId. "requestId" is the API's own (X-Request-Id, the one
// clients see); one name each keeps a line free of duplicate keys, which
// JSON readers resolve differently. Callers log ids, sizes and hashes, never
// keys or code.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: lambdacontext.ReplaceAttr})
	return slog.New(requestIDHandler{h, map[string]bool{}})
}

// AWSRequestIDKey is the log attribute of the Lambda invocation's id.
const AWSRequestIDKey = "awsRequestId"

// requestIDHandler adds the Lambda request id from the context, and keeps
// every top-level key once: packages shared with local serve (the API's
// access log names the caller's tenant) repeat what the functions' logger
// already carries, and the first value of a key is the one kept.
type requestIDHandler struct {
	slog.Handler
	// keys are the top-level keys added with WithAttrs; nil once a group
	// is open, as later attributes are nested and cannot collide.
	keys map[string]bool
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	seen := make(map[string]bool, len(h.keys)+r.NumAttrs()+1)
	for k := range h.keys {
		seen[k] = true
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if h.keys == nil || !seen[a.Key] {
			seen[a.Key] = true
			out.AddAttrs(a)
		}
		return true
	})
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" && !seen[AWSRequestIDKey] {
		out.AddAttrs(slog.String(AWSRequestIDKey, lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, out)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	keys := h.keys
	if keys != nil {
		keys = make(map[string]bool, len(h.keys)+len(attrs))
		for k := range h.keys {
			keys[k] = true
		}
		for _, a := range attrs {
			keys[a.Key] = true
		}
	}
	return requestIDHandler{h.Handler.WithAttrs(attrs), keys}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name), nil}
}
