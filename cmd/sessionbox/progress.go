package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressMin is the smallest transfer that shows a progress bar: smaller
// ones end before a bar would say anything.
const progressMin = 4 << 20

// stderrIsTerminal says whether a person watches stderr; bars are drawn
// only then, never into a log or a pipe.
var stderrIsTerminal = func() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// progress is a bar on stderr for a transfer of size bytes, or nil when the
// transfer is small or stderr is not a terminal. A nil bar's wrappers pass
// the stream through untouched.
func progress(size int64, desc string) *progressbar.ProgressBar {
	if size < progressMin || !stderrIsTerminal() {
		return nil
	}
	return progressbar.DefaultBytes(size, desc)
}

// countReader counts what is read from r on bar.
func countReader(r io.Reader, bar *progressbar.ProgressBar) io.Reader {
	if bar == nil {
		return r
	}
	return io.TeeReader(r, bar)
}

// countWriter counts what is written to w on bar.
func countWriter(w io.Writer, bar *progressbar.ProgressBar) io.Writer {
	if bar == nil {
		return w
	}
	return io.MultiWriter(w, bar)
}

// finish completes a bar, if there is one: filled when the transfer
// succeeded, left where it stopped when it failed.
func finish(bar *progressbar.ProgressBar, err error) {
	switch {
	case bar == nil:
	case err == nil:
		_ = bar.Finish()
	default:
		_ = bar.Exit()
	}
}
