//go:build linux

package kernel

import (
	"bytes"
	"encoding/json"
	"time"
)

// changedFile is one file a cell created or changed below its context's
// working directory, as the kernel's A frame lists it.
type changedFile struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// changedReport is the kernel's A frame: the directory it scanned (two
// levels deep, dot names skipped) and what changed there during the cell.
type changedReport struct {
	Root  string        `json:"root"`
	Files []changedFile `json:"files"`
}

// filesChangedLine is the sessionbox extension line sent just before
// end_of_execution: the E2B SDKs skip line types they do not know, and
// sessionbox reads it instead of listing the directory after every cell.
type filesChangedLine struct {
	Type string `json:"type"`
	changedReport
	Complete bool `json:"complete"`
}

// maxChangedFiles matches the kernel's scan bound; more is not a report
// the kernel made.
const maxChangedFiles = 2000

// emptyReport remembers a kernel's report that nothing changed, and the
// line it became: most cells change no file, and the kernel sends the very
// same bytes each time, so the line is not decoded and encoded again.
type emptyReport struct {
	report, line []byte
}

// appendFilesChangedLine re-encodes the kernel's report so that whatever
// user code writes to the event pipe can only yield a well-formed line, or
// none. empty, when not nil, caches the kernel's report of no changes.
func appendFilesChangedLine(b []byte, data []byte, empty *emptyReport) []byte {
	if empty != nil && empty.line != nil && bytes.Equal(data, empty.report) {
		return append(b, empty.line...)
	}
	var rep changedReport
	if err := json.Unmarshal(data, &rep); err != nil || rep.Root == "" || len(rep.Files) > maxChangedFiles {
		return b
	}
	if rep.Files == nil {
		rep.Files = []changedFile{}
	}
	line, err := json.Marshal(filesChangedLine{Type: "files_changed", changedReport: rep, Complete: true})
	if err != nil {
		return b
	}
	line = append(line, '\n')
	if empty != nil && len(rep.Files) == 0 {
		empty.report, empty.line = bytes.Clone(data), line
	}
	return append(b, line...)
}
