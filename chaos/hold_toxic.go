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
type hold struct {
	Delay int64 `json:"delay"` // milliseconds
	// Match, when set, holds only the chunks that contain it, in any case: Redis command names are, and
	// clients send them in either (go-redis "expire", redis-py "EXPIRE"). A later chunk of the same
	// connection still waits behind a held one.
	Match string `json:"match"`

	ended atomic.Int64 // unix nanoseconds at which the fault ended; 0 while it holds
}

// holdState is one connection's chunk in hand.
type holdState struct {
	pending *stream.StreamChunk
	due     time.Time
}

var registerHoldOnce sync.Once

func registerHold() {
	registerHoldOnce.Do(func() { toxics.Register(holdType, new(hold)) })
}

// end stops holding data sent from now on.
func (t *hold) end(now time.Time) { t.ended.CompareAndSwap(0, now.UnixNano()) }

// NewState implements toxics.StatefulToxic.
func (t *hold) NewState() interface{} { return new(holdState) }

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
		st = new(holdState)
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
		select {
		case stub.Output <- st.pending:
			st.pending = nil
		case <-stub.Interrupt:
			return
		}
	}
}

// Cleanup implements toxics.CleanupToxic: a removed toxic delivers what it holds.
func (t *hold) Cleanup(stub *toxics.ToxicStub) {
	if st, _ := stub.State.(*holdState); st != nil && st.pending != nil {
		_ = stub.WriteOutput(st.pending, 5*time.Second)
		st.pending = nil
	}
}

var (
	_ toxics.StatefulToxic = (*hold)(nil)
	_ toxics.CleanupToxic  = (*hold)(nil)
)
