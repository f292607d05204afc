// Package memnet is an in-memory network connection for virtual-time runs: a pair of net.Conns whose
// every wait (for data, for room, for a deadline) is on a channel or a timer, so a goroutine blocked on
// one counts as durably blocked inside a testing/synctest bubble and the bubble's clock can move on.
//
// Unlike net.Pipe, each direction is buffered (writes return once the data is queued, as a socket's send
// buffer lets them), so a writer never waits for its reader to be reading: a server that publishes to a
// subscriber that is busy writing its own request does not deadlock against it.
package memnet

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Depth is how many writes a direction queues before a writer waits for the reader (its "socket
// buffer"). A Redis connection has at most a handful of commands in flight, so a writer waits only
// behind a reader that stopped reading (a paused server), as it would on a full TCP buffer.
const Depth = 256

// Addr is the address of one end of an in-memory connection.
type Addr string

// Network implements net.Addr.
func (Addr) Network() string { return "mem" }

// String implements net.Addr.
func (a Addr) String() string { return string(a) }

// Pipe returns the two ends of a new connection: what is written to one is read from the other, in
// order. local names the dialing end, remote the accepting end.
func Pipe(local, remote string) (net.Conn, net.Conn) {
	ab, ba := newHalf(), newHalf()
	a := &Conn{in: ba, out: ab, local: Addr(local), remote: Addr(remote), closed: make(chan struct{})}
	b := &Conn{in: ab, out: ba, local: Addr(remote), remote: Addr(local), closed: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

// half is one direction of a connection.
type half struct {
	ch chan []byte
	// shut is closed when the writing end closes: the reader reads what is queued, then io.EOF.
	shut     chan struct{}
	shutOnce sync.Once
}

func newHalf() *half { return &half{ch: make(chan []byte, Depth), shut: make(chan struct{})} }

func (h *half) close() { h.shutOnce.Do(func() { close(h.shut) }) }

// deadline is a read or write deadline that a blocked call notices when it changes.
type deadline struct {
	mu      sync.Mutex // held for a few instructions only, never across a wait
	at      time.Time
	changed chan struct{}
}

// wait returns a channel that fires when the deadline passes (nil: never) and one that is closed when
// the deadline is changed, with a stop for the timer.
func (d *deadline) wait() (expired <-chan time.Time, changed <-chan struct{}, stop func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	changed = d.changed
	if d.at.IsZero() {
		return nil, changed, func() {}
	}
	dur := time.Until(d.at)
	if dur <= 0 {
		c := make(chan time.Time, 1)
		c <- d.at
		return c, changed, func() {}
	}
	t := time.NewTimer(dur)
	return t.C, changed, func() { t.Stop() }
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = t
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

// Conn is one end of an in-memory connection.
type Conn struct {
	in, out       *half
	peer          *Conn
	local, remote Addr
	rest          []byte // what the last read left of a chunk

	closed    chan struct{}
	closeOnce sync.Once
	rd, wd    deadline
}

var _ net.Conn = (*Conn)(nil)

// Read implements net.Conn. It must not be called concurrently with itself, as with any stream.
func (c *Conn) Read(b []byte) (int, error) {
	if len(c.rest) > 0 {
		n := copy(b, c.rest)
		c.rest = c.rest[n:]
		return n, nil
	}
	for {
		select {
		case <-c.closed:
			return 0, net.ErrClosed
		default:
		}
		// What is queued is read before the writer's close is seen.
		select {
		case chunk := <-c.in.ch:
			return c.take(b, chunk), nil
		default:
		}
		expired, changed, stop := c.rd.wait()
		select {
		case chunk := <-c.in.ch:
			stop()
			return c.take(b, chunk), nil
		case <-c.in.shut:
			stop()
			select {
			case chunk := <-c.in.ch:
				return c.take(b, chunk), nil
			default:
				return 0, io.EOF
			}
		case <-c.closed:
			stop()
			return 0, net.ErrClosed
		case <-expired:
			return 0, os.ErrDeadlineExceeded
		case <-changed:
			stop()
		}
	}
}

func (c *Conn) take(b, chunk []byte) int {
	n := copy(b, chunk)
	if n < len(chunk) {
		c.rest = chunk[n:]
	}
	return n
}

// Write implements net.Conn: the data is queued for the other end, which may have closed (then the
// write fails as on a reset connection).
func (c *Conn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	chunk := append([]byte(nil), b...)
	for {
		select {
		case <-c.closed:
			return 0, net.ErrClosed
		case <-c.out.shut:
			return 0, errBrokenPipe
		case <-c.peer.closed:
			return 0, errReset
		default:
		}
		expired, changed, stop := c.wd.wait()
		select {
		case c.out.ch <- chunk:
			stop()
			return len(b), nil
		case <-c.closed:
			stop()
			return 0, net.ErrClosed
		case <-c.peer.closed:
			stop()
			return 0, errReset
		case <-expired:
			return 0, os.ErrDeadlineExceeded
		case <-changed:
			stop()
		}
	}
}

var (
	errReset      = &net.OpError{Op: "write", Net: "mem", Err: errors.New("connection reset by peer")}
	errBrokenPipe = &net.OpError{Op: "write", Net: "mem", Err: errors.New("broken pipe")}
)

// Close implements net.Conn: the other end reads what was queued, then io.EOF; this end's calls fail.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.out.close()
		c.in.close()
	})
	return nil
}

// Closed reports whether Close was called on this end.
func (c *Conn) Closed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// LocalAddr implements net.Conn.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr implements net.Conn.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline implements net.Conn.
func (c *Conn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}

// SetReadDeadline implements net.Conn.
func (c *Conn) SetReadDeadline(t time.Time) error { c.rd.set(t); return nil }

// SetWriteDeadline implements net.Conn.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }

// Done returns a channel closed when Close is called on this end.
func (c *Conn) Done() <-chan struct{} { return c.closed }
