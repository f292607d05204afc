package chaos

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// holdType is the toxic type name of hold in toxiproxy's registry.
const holdType = "tenure_hold"

// hold delays every chunk of one direction by Delay after it was sent, then delivers it: a slow link,
// not a lost one. A connection's later data waits behind its held data, as TCP's would; other
// connections are independent, so a request sent on a fresh connection after the fault ended can land
// before one held on an older connection.
//
// Ending the fault (end) stops holding new data but keeps delivering what is held at its own time:
// a request sent inside the fault's window still lands Delay after it was sent. Removing the toxic
// (Heal, or another fault on the link) delivers whatever it still holds at once.
//
// Data a connection sends while a chunk is in hand waits in the toxic's buffer (holdBuffer chunks), so
// that the link keeps reading it and each chunk carries the time it was sent: without the buffer, what
// the sender wrote meanwhile stays in the socket, is read only once the chain moves again, and is
// then held Delay from that later reading.
type hold struct {
	Delay int64 `json:"delay"` // milliseconds
	// Match, when set, holds only the chunks that contain it, in any case: Redis command names are, and
	// clients send them in either (go-redis "expire", redis-py "EXPIRE"). A later chunk of the same
	// connection still waits behind a held one.
	Match string `json:"match"`

	ended atomic.Int64 // unix nanoseconds at which the fault ended; 0 while it holds
	// observe, when set, is told of every chunk delivered late (see Held).
	observe atomic.Pointer[func(Held)]
}

// holdBuffer is how many chunks of a connection may wait behind the one in hand, as toxiproxy's own
// latency toxic buffers.
const holdBuffer = 1024

// holdState is one connection's chunk in hand, and what the observer needs of the connection.
type holdState struct {
	pending *stream.StreamChunk
	due     time.Time

	conn    uint64    // the connection's name for the observer (Held.Conn)
	off     int64     // bytes of the connection delivered so far (Held.Offset)
	late    bool      // the last chunk delivered was late
	lastOut time.Time // when the last chunk was delivered
}

// Held is a chunk of one connection that a hold delivered later than the link read it: held for the
// fault's delay itself, or queued behind data that was. Chunks delivered on time are not reported.
type Held struct {
	// Conn names the connection, unique in the process. A later hold on the same connection (another
	// fault) names it anew, its Offset counting from 0 again.
	Conn uint64
	// Offset is how many bytes of the connection the hold delivered before this chunk: a gap since the
	// last chunk reported is data that went through on time.
	Offset int64
	// Data is the chunk as delivered. It belongs to the link: read it, do not keep or modify it.
	Data []byte
	// Read is when the link read the chunk from its sender; Delivered, when the hold passed it on
	// towards the other side (at least the delay after Read for a chunk it held).
	Read, Delivered time.Time
}

// holdConns numbers the connections the holds see (Held.Conn).
var holdConns atomic.Uint64

var registerHoldOnce sync.Once

func registerHold() {
	registerHoldOnce.Do(func() { toxics.Register(holdType, new(hold)) })
}

// end stops holding data sent from now on.
func (t *hold) end(now time.Time) { t.ended.CompareAndSwap(0, now.UnixNano()) }

// NewState implements toxics.StatefulToxic.
func (t *hold) NewState() interface{} { return &holdState{conn: holdConns.Add(1)} }

// GetBufferSize implements toxics.BufferedToxic.
func (t *hold) GetBufferSize() int { return holdBuffer }

// delivered notes that c, due at due, was passed on at at, and tells the observer when it was late: held
// by this toxic, or read while the late chunk before it was still in hand.
func (t *hold) delivered(st *holdState, c *stream.StreamChunk, due, at time.Time) {
	late := due.After(c.Timestamp) || (st.late && st.lastOut.After(c.Timestamp))
	if f := t.observe.Load(); late && f != nil {
		(*f)(Held{Conn: st.conn, Offset: st.off, Data: c.Data, Read: c.Timestamp, Delivered: at})
	}
	st.off += int64(len(c.Data))
	st.late, st.lastOut = late, at
}

func (t *hold) dueOf(c *stream.StreamChunk) time.Time {
	if e := t.ended.Load(); e != 0 && c.Timestamp.UnixNano() > e {
		return c.Timestamp
	}
	if t.Match != "" && !bytes.Contains(bytes.ToLower(c.Data), bytes.ToLower([]byte(t.Match))) {
		return c.Timestamp
	}
	return c.Timestamp.Add(time.Duration(t.Delay) * time.Millisecond)
}

// Pipe implements toxics.Toxic. The chunk in hand lives in the connection's state, so that an
// interrupt (toxiproxy rewiring the chain when another toxic is added) does not deliver it early.
func (t *hold) Pipe(stub *toxics.ToxicStub) {
	st, _ := stub.State.(*holdState)
	if st == nil {
		st = t.NewState().(*holdState)
		stub.State = st
	}
	for {
		if st.pending == nil {
			select {
			case <-stub.Interrupt:
				return
			case c := <-stub.Input:
				if c == nil {
					stub.Close()
					return
				}
				st.pending, st.due = c, t.dueOf(c)
			}
		}
		if wait := time.Until(st.due); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-stub.Interrupt:
				timer.Stop()
				return
			}
		}
		// Stamped before it is passed on: the other side may act on it (and answer) at once.
		at := time.Now()
		select {
		case stub.Output <- st.pending:
			t.delivered(st, st.pending, st.due, at)
			st.pending = nil
		case <-stub.Interrupt:
			return
		}
	}
}

// Cleanup implements toxics.CleanupToxic: a removed toxic delivers what it holds, the chunk in hand
// and those waiting behind it, at once.
func (t *hold) Cleanup(stub *toxics.ToxicStub) {
	st, _ := stub.State.(*holdState)
	if st == nil {
		return
	}
	if st.pending != nil {
		at := time.Now()
		if stub.WriteOutput(st.pending, 5*time.Second) == nil {
			t.delivered(st, st.pending, st.due, at)
		}
		st.pending = nil
	}
	// What waits in the buffer goes now too (toxiproxy would pass it on itself, unobserved). A closed
	// input is left to toxiproxy: len counts only the chunks still in it.
	for len(stub.Input) > 0 {
		c := <-stub.Input
		if c == nil {
			return
		}
		at := time.Now()
		if stub.WriteOutput(c, 5*time.Second) != nil {
			return
		}
		t.delivered(st, c, c.Timestamp, at)
	}
}

var (
	_ toxics.StatefulToxic = (*hold)(nil)
	_ toxics.CleanupToxic  = (*hold)(nil)
	_ toxics.BufferedToxic = (*hold)(nil)
)
