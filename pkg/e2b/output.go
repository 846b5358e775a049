package e2b

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// DefaultMaxOutputBytes is how much output of one kind a command handle or
// an execution keeps in memory when neither Config.MaxOutputBytes nor the
// call's own option says otherwise.
const DefaultMaxOutputBytes = 16 << 20

// outputLimit resolves a per-call limit against the client's: 0 defers to
// the client, negative means unlimited (returned as -1).
func (c *Client) outputLimit(perCall int) int {
	limit := perCall
	if limit == 0 {
		limit = c.cfg.MaxOutputBytes
	}
	if limit < 0 {
		return -1
	}
	return limit
}

// headBuffer keeps the first max bytes written to it (all when max < 0) and
// remembers whether anything was dropped.
type headBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *headBuffer) write(p []byte) {
	if b.max >= 0 {
		room := b.max - b.buf.Len()
		if len(p) > room {
			b.truncated = true
			p = p[:max(room, 0)]
		}
	}
	b.buf.Write(p)
}

// budget counts the bytes an execution keeps of one kind of output.
type budget struct {
	max  int // < 0: unlimited
	used int
}

// take reserves n bytes, reporting false when they do not fit.
func (b *budget) take(n int) bool {
	if b.max >= 0 && b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

// fit returns the longest prefix of s that fits (cut on a rune boundary)
// and reserves it.
func (b *budget) fit(s string) string {
	if b.max < 0 {
		return s
	}
	if n := max(b.max-b.used, 0); len(s) > n {
		// Step back at most UTFMax-1 bytes so a rune is not split.
		for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); i++ {
			n--
		}
		s = s[:n]
	}
	b.used += len(s)
	return s
}

// lineReader yields NDJSON lines of at most max bytes (any length when
// max < 0) without ever holding more than that of one line.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// lineReaders recycles the buffered readers of finished streams: one per
// execution is otherwise the largest allocation of a short one.
var lineReaders = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

func newLineReader(r io.Reader, max int) *lineReader {
	br := lineReaders.Get().(*bufio.Reader)
	br.Reset(r)
	return &lineReader{r: br, max: max}
}

// release returns the reader's buffer for reuse; the reader and the lines
// it returned are unusable after.
func (l *lineReader) release() {
	l.r.Reset(nil)
	lineReaders.Put(l.r)
	l.r, l.buf = nil, nil
}

// next returns the next line without its newline; the slice is valid until
// the following call. A final line without a newline is returned before
// io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if l.max >= 0 && len(l.buf)+len(chunk) > l.max+1 { // +1: the newline
			return nil, fmt.Errorf("a line of the stream is longer than %d bytes: %w", l.max, ErrOutputTooLarge)
		}
		l.buf = append(l.buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(l.buf, []byte("\n")), nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(l.buf) > 0:
			return l.buf, nil
		default:
			return nil, err
		}
	}
}
