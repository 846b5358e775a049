package session

import (
	"cmp"
	"slices"
	"sync"
	"unicode/utf8"
)

// maxErrorValueBytes caps an exception's value (its message); the
// traceback gets the output limit of a stream.
const maxErrorValueBytes = 16 << 10

// maxStubTextBytes is how much text a result cut for size keeps.
const maxStubTextBytes = 1 << 10

// outputSink forwards live output to a caller, cutting each stream at the
// output limit, the exception at its own, and rich results at a budget for
// all of them together; it remembers whether anything came at all (then
// the code ran, and must not be sent again).
type outputSink struct {
	mu          sync.Mutex
	limit       int
	resultLimit int
	stdout      int
	stderr      int
	results     int // encoded bytes of results forwarded live
	any         bool
	truncated   bool
	fn          func(Event)
}

func (m *Manager) newOutputSink(fn func(Event)) *outputSink {
	return &outputSink{limit: m.cfg.MaxOutputBytes, resultLimit: m.cfg.MaxResultBytes, fn: fn}
}

// begin tells the caller that the call reached its sandbox (Event.Started);
// it is not output, so a call that fails after it may still be retried.
func (o *outputSink) begin() {
	if o.fn != nil {
		o.fn(Event{Started: true})
	}
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
	if e.Error != nil {
		e.Error = o.cutError(e.Error)
	}
	if e.Result != nil {
		if e.Result = o.liveResult(e.Result); e.Result == nil {
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

// cutError bounds an exception's value and traceback.
func (o *outputSink) cutError(e *ExecError) *ExecError {
	valueLimit := min(o.limit, maxErrorValueBytes)
	if len(e.Value) <= valueLimit && len(e.Traceback) <= o.limit && len(e.Name) <= maxStubTextBytes {
		return e
	}
	o.truncated = true
	return &ExecError{Name: cutString(e.Name, maxStubTextBytes), Value: cutString(e.Value, valueLimit),
		Traceback: cutString(e.Traceback, o.limit)}
}

// liveResult is r as far as the results budget still has room: whole, cut
// to its text, or nil.
func (o *outputSink) liveResult(r *Result) *Result {
	n := resultSize(*r)
	if o.results+n > o.resultLimit {
		o.truncated = true
		stub := stubResult(*r)
		if n = resultSize(stub); o.results+n > o.resultLimit {
			return nil
		}
		r = &stub
	}
	o.results += n
	return r
}

func (o *outputSink) started() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.any
}

// finish bounds the result as the live output was, and flags truncation
// seen live or now.
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
	if out.Error != nil {
		out.Error = o.cutError(out.Error)
	}
	var cut bool
	out.Results, cut = boundResults(out.Results, o.resultLimit)
	o.truncated = o.truncated || cut
	out.Truncated = out.Truncated || o.truncated
	return &out
}

// boundResults fits results into limit encoded bytes: the largest are cut
// to their text first; if many small ones are still too much, main results
// are kept and the others in order while they fit. cut reports a change.
func boundResults(results []Result, limit int) (out []Result, cut bool) {
	sizes := make([]int, len(results))
	total := 0
	for i := range results {
		sizes[i] = resultSize(results[i])
		total += sizes[i]
	}
	if total <= limit {
		return results, false
	}
	out = slices.Clone(results)
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
	for _, i := range order {
		if total <= limit {
			return out, true
		}
		stub := stubResult(out[i])
		if n := resultSize(stub); n < sizes[i] {
			out[i], total, sizes[i] = stub, total-sizes[i]+n, n
		}
	}
	if total <= limit {
		return out, true
	}
	used := 0
	for i := range out {
		if out[i].IsMainResult {
			used += sizes[i]
		}
	}
	kept := out[:0]
	for i := range out {
		switch {
		case out[i].IsMainResult && sizes[i] <= limit:
		case !out[i].IsMainResult && used+sizes[i] <= limit:
			used += sizes[i]
		default:
			continue
		}
		kept = append(kept, out[i])
	}
	return kept, true
}

// resultSize is r's share of an encoded list of results: itself and a comma.
func resultSize(r Result) int { return jsonSize(r) + 1 }

// stubResult is what is left of a result cut for size: its text, short.
func stubResult(r Result) Result {
	return Result{Text: cutString(r.Text, maxStubTextBytes), IsMainResult: r.IsMainResult}
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
