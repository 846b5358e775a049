package session

import (
	"sync"
	"unicode/utf8"
)

// outputSink forwards live output to a caller, cutting each stream at the
// output limit, and remembers whether anything came at all (then the code
// ran, and must not be sent again).
type outputSink struct {
	mu        sync.Mutex
	limit     int
	stdout    int
	stderr    int
	any       bool
	truncated bool
	fn        func(Event)
}

func newOutputSink(limit int, fn func(Event)) *outputSink {
	return &outputSink{limit: limit, fn: fn}
}

// event takes one piece of output from the provider.
func (o *outputSink) event(e Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.any = true
	if e.Stdout != "" {
		if e.Stdout = o.cut(&o.stdout, e.Stdout); e.Stdout == "" {
			return
		}
	}
	if e.Stderr != "" {
		if e.Stderr = o.cut(&o.stderr, e.Stderr); e.Stderr == "" {
			return
		}
	}
	if o.fn != nil {
		o.fn(e)
	}
}

// cut returns the part of s that fits in what is left of a stream's budget.
func (o *outputSink) cut(used *int, s string) string {
	room := o.limit - *used
	if len(s) > room {
		s = cutString(s, max(room, 0))
		o.truncated = true
	}
	*used += len(s)
	return s
}

func (o *outputSink) started() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.any
}

// finish cuts the result's streams to the limit and flags truncation seen
// live or now.
func (o *outputSink) finish(r *ExecResult) *ExecResult {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := *r
	if len(out.Stdout) > o.limit {
		out.Stdout, o.truncated = cutString(out.Stdout, o.limit), true
	}
	if len(out.Stderr) > o.limit {
		out.Stderr, o.truncated = cutString(out.Stderr, o.limit), true
	}
	out.Truncated = out.Truncated || o.truncated
	return &out
}

// cutString returns at most n bytes of s, not splitting a UTF-8 sequence.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
