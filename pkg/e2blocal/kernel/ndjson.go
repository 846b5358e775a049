//go:build linux

package kernel

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

const endOfExecutionLine = `{"type": "end_of_execution"}` + "\n"

// mimeFields maps MIME types of a display bundle to result line fields, in the
// order they are written.
var mimeFields = [...]struct{ mime, field string }{
	{"text/plain", "text"},
	{"text/html", "html"},
	{"text/markdown", "markdown"},
	{"image/svg+xml", "svg"},
	{"image/png", "png"},
	{"image/jpeg", "jpeg"},
	{"application/pdf", "pdf"},
	{"text/latex", "latex"},
	{"application/json", "json"},
	{"application/javascript", "javascript"},
	{"e2b/data", "data"},
	{"e2b/chart", "chart"},
}

const hex = "0123456789abcdef"

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendCountLine writes the execution count line; kernelRestarted adds
// the sessionbox extension saying the kernel was replaced since the last
// cell (E2B's SDKs read only the count).
func appendCountLine(b []byte, n []byte, kernelRestarted bool) []byte {
	b = append(b, `{"type":"number_of_executions","execution_count":`...)
	b = append(b, n...)
	if kernelRestarted {
		b = append(b, `,"kernel_restarted":true`...)
	}
	return append(b, "}\n"...)
}

func appendStreamLine(b []byte, typ string, text []byte, now time.Time) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","text":`...)
	b = appendJSONString(b, string(text))
	b = append(b, `,"timestamp":"`...)
	b = now.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	return append(b, "\"}\n"...)
}

func appendErrorLine(b []byte, name, value, traceback string) []byte {
	b = append(b, `{"type":"error","name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"value":`...)
	b = appendJSONString(b, value)
	b = append(b, `,"traceback":`...)
	b = appendJSONString(b, traceback)
	return append(b, "}\n"...)
}

// appendTimeoutLine is the error line of a cell stopped by its timeout. Two
// sessionbox extension fields say so without guessing from the name (user
// code may raise TimeoutError itself): timed_out, and kernel_restarted when
// the kernel would not stop and was replaced, its state gone. E2B's SDKs
// read only name, value and traceback.
func appendTimeoutLine(b []byte, value, traceback string, restarted bool) []byte {
	b = append(b, `{"type":"error","name":"TimeoutError","value":`...)
	b = appendJSONString(b, value)
	b = append(b, `,"traceback":`...)
	b = appendJSONString(b, traceback)
	b = append(b, `,"timed_out":true,"kernel_restarted":`...)
	b = strconv.AppendBool(b, restarted)
	return append(b, "}\n"...)
}

// stripQuotes removes the quotes repr() puts around a string result.
func stripQuotes(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// appendTextResultLine writes a main result that only has text/plain.
func appendTextResultLine(b []byte, text string) []byte {
	b = append(b, `{"type":"result","text":`...)
	b = appendJSONString(b, stripQuotes(text))
	return append(b, `,"is_main_result":true}`+"\n"...)
}

// appendBundleLine maps a MIME bundle (JSON object from the kernel) to a result line.
func appendBundleLine(b []byte, bundle []byte, main bool) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(bundle, &m); err != nil {
		return b, fmt.Errorf("decode display bundle: %w", err)
	}
	start := len(b)
	b = append(b, `{"type":"result"`...)
	for _, f := range mimeFields {
		raw, ok := m[f.mime]
		if !ok {
			continue
		}
		delete(m, f.mime)
		if string(raw) == "null" {
			continue
		}
		b = append(b, ',', '"')
		b = append(b, f.field...)
		b = append(b, '"', ':')
		if f.mime == "text/plain" {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				b = appendJSONString(b, stripQuotes(s))
				continue
			}
		}
		b = append(b, raw...)
	}
	if len(m) > 0 {
		extra, err := json.Marshal(m)
		if err != nil {
			return b[:start], fmt.Errorf("encode extra formats: %w", err)
		}
		b = append(b, `,"extra":`...)
		b = append(b, extra...)
	}
	b = append(b, `,"is_main_result":`...)
	b = strconv.AppendBool(b, main)
	return append(b, "}\n"...), nil
}
