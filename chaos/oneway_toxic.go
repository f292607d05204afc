package chaos

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// oneWayType is the toxic type name of oneWay in toxiproxy's registry.
const oneWayType = "tenure_one_way"

// oneWay is a pair of toxics, one on each direction of a link, that together drop every reply of a
// Redis connection except the replies to the connection's handshake. A client that dials during the
// fault completes its handshake (HELLO, CLIENT SETINFO, ioredis's INFO: handshakeCommands) and sends
// its command, which lands; only the command's reply is lost. Without this a one-way partition is a
// full one for every new connection: go-redis needs the HELLO reply before it sends anything else
// (ioredis the INFO reply), so its retries on fresh connections would never reach the server.
//
// The request side (upstream) reads the commands a connection starts with and counts the leading
// handshake commands; the reply side (downstream) of the same connection lets exactly that many
// replies through and drops the rest. The two sides of one connection find each other through their
// shared group: toxiproxy creates a connection's upstream state, then its downstream state, from one
// goroutine, so the downstream state takes the handshake record the upstream state just made.
// Connections that were open when the fault began, and streams that are not RESP (a PostgreSQL link),
// lose every reply, as under a plain one-way partition.
type oneWay struct {
	// Group names the pair of toxics of one fault on one link.
	Group string `json:"group"`
	// Requests is true on the upstream toxic.
	Requests bool `json:"requests"`
}

// oneWayGroup is what the two toxics of one fault share.
type oneWayGroup struct {
	mu    sync.Mutex
	armed bool          // both toxics are in place: states created from now on are new connections
	last  *oneWayHandsh // the handshake record of the connection whose upstream state came last
}

// oneWayHandsh is one connection's handshake as the request side saw it.
type oneWayHandsh struct {
	mu    sync.Mutex
	count int // leading handshake commands sent so far
}

func (h *oneWayHandsh) passes(reply int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return reply < h.count
}

var (
	oneWayGroupsMu sync.Mutex
	oneWayGroups   = map[string]*oneWayGroup{}
)

func oneWayGroupOf(name string) *oneWayGroup {
	oneWayGroupsMu.Lock()
	defer oneWayGroupsMu.Unlock()
	g := oneWayGroups[name]
	if g == nil {
		g = new(oneWayGroup)
		oneWayGroups[name] = g
	}
	return g
}

// armOneWay marks a group's toxics as both in place; dropOneWay forgets the group when the fault ends.
func armOneWay(name string) {
	g := oneWayGroupOf(name)
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
}

func dropOneWay(name string) {
	oneWayGroupsMu.Lock()
	delete(oneWayGroups, name)
	oneWayGroupsMu.Unlock()
}

// oneWayState is the per-connection state of one side. hs is nil for a connection that was open
// before the fault (its replies are all dropped).
type oneWayState struct {
	hs      *oneWayHandsh
	buf     []byte
	replies int
	done    bool // request side: the handshake is over, stop reading; reply side: drop everything
}

var registerOneWayOnce sync.Once

// registerOneWay registers the toxic type with toxiproxy, once per process.
func registerOneWay() {
	registerOneWayOnce.Do(func() { toxics.Register(oneWayType, new(oneWay)) })
}

// NewState implements toxics.StatefulToxic: toxiproxy keeps one state per connection and direction.
func (t *oneWay) NewState() interface{} {
	g := oneWayGroupOf(t.Group)
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.armed {
		return &oneWayState{done: true}
	}
	if t.Requests {
		hs := new(oneWayHandsh)
		g.last = hs
		return &oneWayState{hs: hs}
	}
	hs := g.last
	g.last = nil
	return &oneWayState{hs: hs, done: hs == nil}
}

// Pipe implements toxics.Toxic.
func (t *oneWay) Pipe(stub *toxics.ToxicStub) {
	st, _ := stub.State.(*oneWayState)
	if st == nil {
		st = &oneWayState{done: true}
		stub.State = st
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			var out []byte
			if t.Requests {
				// Every request goes through, but only after it was counted: its reply cannot come
				// back before the reply side knows whether it belongs to the handshake.
				st.readRequests(c.Data)
				out = c.Data
			} else {
				out = st.filterReplies(c.Data)
			}
			if len(out) == 0 {
				continue
			}
			select {
			case stub.Output <- &stream.StreamChunk{Data: out, Timestamp: c.Timestamp}:
			case <-stub.Interrupt:
				return
			}
		}
	}
}

// handshakeCommands are the commands clients send to set up a new connection before any command of
// their own: HELLO, AUTH, CLIENT (SETNAME, SETINFO, ...) and SELECT (go-redis, redis-py 5, ioredis),
// READONLY (a cluster client reading from replicas), and INFO (ioredis's ready check, which holds the
// client's commands until its reply says the server is not loading).
var handshakeCommands = map[string]bool{"HELLO": true, "AUTH": true, "CLIENT": true, "SELECT": true, "READONLY": true, "INFO": true}

func (st *oneWayState) readRequests(data []byte) {
	if st.done {
		return
	}
	st.buf = append(st.buf, data...)
	for !st.done {
		n, err := respValueLen(st.buf)
		if err != nil {
			st.done, st.buf = true, nil
			return
		}
		if n == 0 {
			return
		}
		if !handshakeCommands[strings.ToUpper(commandName(st.buf[:n]))] {
			st.done, st.buf = true, nil
			return
		}
		st.hs.mu.Lock()
		st.hs.count++
		st.hs.mu.Unlock()
		st.buf = st.buf[n:]
	}
}

func (st *oneWayState) filterReplies(data []byte) []byte {
	if st.done {
		return nil
	}
	st.buf = append(st.buf, data...)
	var out []byte
	for !st.done {
		n, err := respValueLen(st.buf)
		if err != nil {
			st.done, st.buf = true, nil
			break
		}
		if n == 0 {
			break
		}
		if st.buf[0] != '>' { // a push frame is not the reply to a command
			if !st.hs.passes(st.replies) {
				st.done, st.buf = true, nil
				break
			}
			st.replies++
		}
		out = append(out, st.buf[:n]...)
		st.buf = st.buf[n:]
	}
	return out
}

// commandName returns the first element of a command sent as a RESP array of bulk strings.
func commandName(v []byte) string {
	i := bytes.Index(v, crlf)
	if i < 0 || v[0] != '*' {
		return ""
	}
	rest := v[i+2:]
	j := bytes.Index(rest, crlf)
	if j < 0 || len(rest) == 0 || rest[0] != '$' {
		return ""
	}
	n, err := strconv.Atoi(string(rest[1:j]))
	if err != nil || n < 0 || len(rest) < j+2+n {
		return ""
	}
	return string(rest[j+2 : j+2+n])
}

var crlf = []byte("\r\n")

var errNotRESP = errors.New("chaos: not a RESP stream")

// respValueLen returns the length of the complete RESP2/RESP3 value at the start of b, 0 when b holds
// only part of one, or an error when b is not RESP. An attribute ('|') counts with the value it
// annotates.
func respValueLen(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	i := bytes.Index(b, crlf)
	if i < 0 {
		if len(b) > 64*1024 {
			return 0, errNotRESP
		}
		return 0, nil
	}
	line := b[1:i]
	head := i + 2
	switch b[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return head, nil
	case '$', '!', '=':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < -1 {
			return 0, errNotRESP
		}
		if n == -1 {
			return head, nil
		}
		if len(b) < head+n+2 {
			return 0, nil
		}
		return head + n + 2, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < -1 {
			return 0, errNotRESP
		}
		if b[0] == '%' || b[0] == '|' {
			n *= 2
		}
		if b[0] == '|' {
			n++ // the annotated value follows the attribute's pairs
		}
		off := head
		for k := 0; k < n; k++ {
			m, err := respValueLen(b[off:])
			if err != nil || m == 0 {
				return 0, err
			}
			off += m
		}
		return off, nil
	}
	return 0, errNotRESP
}

// Compile-time check that toxiproxy keeps per-connection state for the toxic.
var _ toxics.StatefulToxic = (*oneWay)(nil)
