//go:build linux

package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// execStream writes one execution's NDJSON lines, batching them between flushes.
type execStream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	buf  []byte
	gone bool // the client went away: nothing more is written
	// flushed is set once the response was flushed to the client; until
	// then the end of the stream is left to the server, which writes a
	// short response whole, headers included, in one write.
	flushed bool
	cap     int64
	written [2]int64 // stdout, stderr bytes so far
	noted   [2]bool  // truncation already reported
	// resultRoom is what is left of the execution's budget for display
	// results; a display() flood beyond it is dropped (the main result, one
	// frame at most, is always kept).
	resultRoom   int64
	resultsNoted bool
	sawError     bool
	timedOut     bool
	// kernelReplaced is set when the kernel this cell runs on replaced one
	// that died since the last cell; the count line then says
	// kernel_restarted (a sessionbox extension).
	kernelReplaced bool
	timeout        time.Duration
	// changed is the cell's last files_changed line, sent only when the
	// cell finishes normally.
	changed []byte
	// noChanges is the kernel's report of no changed files, remembered
	// across its cells; nil remembers nothing.
	noChanges *emptyReport
}

func newExecStream(w http.ResponseWriter, capBytes, resultBudget int64, timeout time.Duration) *execStream {
	return &execStream{
		w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, 512),
		cap: capBytes, resultRoom: resultBudget, timeout: timeout,
	}
}

func (es *execStream) flush() {
	if !es.write() {
		return
	}
	es.flushed = true
	// A writer that cannot flush still delivers, just later; only a failed
	// flush means the client is gone.
	if err := es.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		es.gone = true
	}
}

// write hands the batched lines to the response writer; false when the
// client is gone.
func (es *execStream) write() bool {
	if es.gone {
		es.buf = es.buf[:0]
		return false
	}
	if len(es.buf) > 0 {
		_, err := es.w.Write(es.buf)
		es.buf = es.buf[:0]
		if err != nil {
			es.gone = true
			return false
		}
	}
	return true
}

func (es *execStream) keepalive() {
	es.buf = append(es.buf, `{"type":"keepalive"}`+"\n"...)
}

// finish ends a cell the kernel completed, with its changed files if
// reported. A timed-out cell that caught the interrupt and ended quietly
// still ends as a timeout.
func (es *execStream) finish() {
	if es.timedOut {
		es.timeoutLine("", false)
	}
	es.buf = append(es.buf, es.changed...)
	es.end()
}

// end writes the last line. The handler returns right after, so a stream
// never flushed is left for the server to send whole.
func (es *execStream) end() {
	es.buf = append(es.buf, endOfExecutionLine...)
	if es.flushed {
		es.flush()
	} else {
		es.write()
	}
}

func (es *execStream) errorLine(name, value, traceback string) {
	if es.sawError {
		return
	}
	es.sawError = true
	es.buf = appendErrorLine(es.buf, name, value, traceback)
}

var streamNames = [2]string{"stdout", "stderr"}

// handle turns one kernel frame into NDJSON.
func (es *execStream) handle(f frame) {
	switch f.typ {
	case frameCount:
		// User code can write to the event pipe too: only a number goes into the line.
		if _, err := strconv.ParseUint(string(f.data), 10, 31); err == nil {
			es.buf = appendCountLine(es.buf, f.data, es.kernelReplaced)
		}
	case frameStdout:
		es.streamText(0, f.data)
	case frameStderr:
		es.streamText(1, f.data)
	case frameTruncated:
		if len(f.data) == 1 && f.data[0] == frameStderr {
			es.noteTruncated(1)
		} else {
			es.noteTruncated(0)
		}
	case frameFiles:
		es.changed = appendFilesChangedLine(es.changed[:0], f.data, es.noChanges)
	case frameText:
		es.buf = appendTextResultLine(es.buf, string(f.data))
	case frameMain, frameDisplay:
		es.result(f)
	case frameError:
		es.kernelError(f.data)
	case frameOversize:
		es.note(fmt.Sprintf("[sessionbox] a result of %s bytes was dropped: too large\n", f.data))
	}
}

func (es *execStream) result(f frame) {
	if f.typ == frameDisplay && int64(len(f.data)) > es.resultRoom {
		if !es.resultsNoted {
			es.resultsNoted = true
			es.note("[sessionbox] results exceeded this execution's budget; the rest were dropped\n")
		}
		return
	}
	if f.typ == frameDisplay {
		es.resultRoom -= int64(len(f.data))
	}
	b, err := appendBundleLine(es.buf, f.data, f.typ == frameMain)
	if err != nil {
		es.note(fmt.Sprintf("[sessionbox] a result was dropped: %v\n", err))
		return
	}
	es.buf = b
}

func (es *execStream) streamText(i int, text []byte) {
	room := es.cap - es.written[i]
	if room <= 0 {
		es.noteTruncated(i)
		return
	}
	cut := false
	if int64(len(text)) > room {
		n := int(room)
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text = text[:n]
		cut = true
	}
	es.written[i] += int64(len(text))
	if len(text) > 0 {
		es.buf = appendStreamLine(es.buf, streamNames[i], text, time.Now())
	}
	if cut {
		es.noteTruncated(i)
	}
}

func (es *execStream) noteTruncated(i int) {
	if es.noted[i] {
		return
	}
	es.noted[i] = true
	es.note(fmt.Sprintf("[sessionbox] %s exceeded %d bytes; the rest of it was dropped\n", streamNames[i], es.cap))
}

// note writes a message of ours on stderr, outside the stream caps.
func (es *execStream) note(msg string) {
	es.buf = appendStreamLine(es.buf, "stderr", []byte(msg), time.Now())
}

type kernelErr struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

func (es *execStream) kernelError(data []byte) {
	var e kernelErr
	if err := json.Unmarshal(data, &e); err != nil {
		e = kernelErr{Name: "KernelError", Value: "malformed error from the kernel"}
	}
	if es.timedOut {
		// Whatever the cell raised once interrupted (KeyboardInterrupt, or
		// something of its own on the way out), it ended by the timeout.
		es.timeoutLine(e.Traceback, false)
		return
	}
	es.errorLine(e.Name, e.Value, e.Traceback)
}

// timeoutLine reports a cell its timeout stopped, once.
func (es *execStream) timeoutLine(traceback string, restarted bool) {
	if es.sawError {
		return
	}
	es.sawError = true
	value := fmt.Sprintf("execution exceeded its timeout of %s and was interrupted; the kernel's state is kept", seconds(es.timeout))
	if restarted {
		value = fmt.Sprintf("execution exceeded its timeout of %s; the kernel did not stop when interrupted and was restarted, so its state is gone", seconds(es.timeout))
	}
	es.buf = appendTimeoutLine(es.buf, value, traceback, restarted)
}

// seconds renders a timeout as people write it: "1 s", "0.5 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// died reports a kernel that went away before finishing the cell.
func (es *execStream) died(p *proc) {
	status := p.exitStatus()
	if es.timedOut {
		es.timeoutLine("", true)
		return
	}
	es.errorLine("DeadKernelError", fmt.Sprintf("The kernel died (%s); it is restarted for the next execution", status), p.stderr.String())
}
