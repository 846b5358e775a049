package httplimits

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sessionbox/sessionbox/pkg/problem"
)

// perClient hands out connections while their remote address holds fewer
// than max; one past that is answered 429 and closed, so it never takes a
// slot of the listener's total cap. Without it one client's slow bodies
// could fill every slot, and everybody else (health checks included) would
// wait in the backlog until the body timeout dropped them.
type perClient struct {
	net.Listener
	max     int
	refusal []byte
	// lingering bounds the refused connections being answered at once: a
	// flood past it is closed unanswered.
	lingering chan struct{}

	mu    sync.Mutex
	conns map[string]int
}

// refusalLinger bounds how long a refused connection is kept to read the
// request it may be sending, so that closing it does not reset the
// connection before the client has read its 429.
const refusalLinger = time.Second

func newPerClient(ln net.Listener, max int) *perClient {
	return &perClient{Listener: ln, max: max, refusal: refusal(max),
		lingering: make(chan struct{}, 64), conns: map[string]int{}}
}

// refusal is the fixed answer to a connection past the cap.
func refusal(max int) []byte {
	body, _ := json.Marshal(map[string]any{
		"type": problem.Limit.Type(), "title": problem.Limit.Title, "status": http.StatusTooManyRequests,
		"detail": fmt.Sprintf("this client already holds %d open connections, the most one address may; close some or reuse them", max),
	})
	return fmt.Appendf(nil, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/problem+json\r\n"+
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

func (l *perClient) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := remoteHost(c)
		if l.take(host) {
			return &clientConn{Conn: c, release: func() { l.release(host) }}, nil
		}
		l.refuse(c)
	}
}

func (l *perClient) take(host string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[host] >= l.max {
		return false
	}
	l.conns[host]++
	return true
}

func (l *perClient) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[host]--; l.conns[host] <= 0 {
		delete(l.conns, host)
	}
}

// refuse answers c 429 and closes it, off the accept loop; when too many
// refusals are already under way it closes c at once.
func (l *perClient) refuse(c net.Conn) {
	select {
	case l.lingering <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.lingering }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refusalLinger))
		if _, err := c.Write(l.refusal); err != nil {
			return
		}
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		// Drain what the client sends until it closes or the linger ends.
		buf := make([]byte, 4<<10)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
}

// remoteHost is the connection's remote IP, or its whole address when it
// has no port (a Unix socket's peer).
func remoteHost(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// clientConn gives its slot back once, however often it is closed.
type clientConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *clientConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
