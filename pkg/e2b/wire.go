package e2b

// Small conversions that put values on the wire, and the draining that takes
// a finished response off it so its connection can be reused.

import (
	"encoding/base64"
	"io"
	"math"
	"strconv"
	"time"
)

func itoa(n int) string { return strconv.Itoa(n) }

// ceilSeconds converts a duration to whole seconds rounding up, as the SDKs
// do for timeouts sent to the API.
func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// maxDrain bounds how much of a finished response is read to recycle its connection.
const maxDrain = 64 << 10

// drainClose reads what is left of a response (a JSON value's trailing
// newline, the chunked terminator) so the connection returns to the pool
// instead of being closed, then closes the body.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxDrain))
	body.Close()
}
