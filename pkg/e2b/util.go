package e2b

import (
	"encoding/base64"
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
