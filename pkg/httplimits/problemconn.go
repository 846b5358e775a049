package httplimits

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/problem"
)

// net/http answers a request it cannot parse (a bad request line, headers
// past MaxHeaderBytes, a bad Host, an unsupported transfer encoding) itself,
// before any handler runs, in plain text: one write of "HTTP/1.1 <status>",
// these headers, and a text body, straight to the connection. problemConn
// turns exactly that write into the same answer as problem+json, the shape
// of every other error the servers send.
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &problemConn{Conn: c}, nil
}

type problemConn struct{ net.Conn }

func (c *problemConn) Write(b []byte) (int, error) {
	answer, ok := asProblem(b)
	if !ok {
		return c.Conn.Write(b)
	}
	if _, err := c.Conn.Write(answer); err != nil {
		return 0, err
	}
	return len(b), nil
}

// asProblem rewrites one of net/http's own plain-text error answers; any
// other write (responses go out through a buffer, with a Date header and
// their headers sorted) is left alone.
func asProblem(b []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("HTTP/1.1 "))
	if !ok {
		return nil, false
	}
	statusLine, text, ok := bytes.Cut(rest, []byte(netHTTPErrorHeaders))
	if !ok || bytes.ContainsAny(statusLine, "\r\n") || len(statusLine) < 4 {
		return nil, false
	}
	code, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	kind, ok := problem.ForStatus(code)
	if !ok {
		kind = problem.Invalid
	}
	detail := string(text)
	if _, after, found := strings.Cut(detail, ": "); found {
		detail = after
	}
	switch {
	case code == http.StatusRequestHeaderFieldsTooLarge:
		detail = "the request line and headers are too large"
	case detail == "" || detail == string(statusLine) || detail == http.StatusText(code):
		detail = "the request could not be parsed as HTTP/1.1"
	default:
		detail = strings.ToLower(detail[:1]) + detail[1:]
	}
	body, _ := json.Marshal(map[string]any{"type": kind.Type(), "title": kind.Title, "status": code, "detail": detail})
	return fmt.Appendf(nil, "HTTP/1.1 %s\r\nContent-Type: application/problem+json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		statusLine, len(body), body), true
}
