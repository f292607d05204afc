package sim

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/resp"
)

// landings gives the operations whose commands a hold delivered late (the slow-requests fault) their
// history.Op.Landed. Each instance's link reports the request chunks its hold delivered late
// (chaos.ObserveHeld); landings decodes the commands in them, per connection, and when the run ends
// (resolve) matches each to the operation of the same instance that sent it. Both recorders, the
// go-redis hook and the wire recorder, sit on the client side of the link, so neither sees a command
// land; and an operation may be recorded before its command lands (its caller gave up) or after (the
// hook records a call when it returns), so the matching waits for both sides.
//
// A landed command matches on what the history keeps of it, Op.Command (abbreviate of its arguments,
// which both recorders take in their wire form), among the operations of the same instance that could
// have sent it: called at or before the link read it, and not over (answered, or given up on) for more
// than landSendSlack by then, since a client writes a command before it waits for its reply. Of
// those, the latest not yet matched takes the landing. Identical commands are told apart by time alone:
// two sent before either was read may swap landings, which say the same thing of both; and commands
// that differ only past what abbreviate keeps (beyond an argument's 45th byte, or the ninth argument) are
// taken for identical.
//
// When every operation that could have sent it is matched already, the landing is a re-send: go-redis
// sends a command again after a lost reply (MaxRetries), all within one call, one operation in the
// hook (at the wire each send is an operation of its own). The operation keeps the last of its
// landings, the latest moment its command acted, which can come after the call returned (an earlier
// send held while a later one was answered). A remote toxiproxy-server reports nothing: Landed stays
// zero there.
type landings struct {
	rec   *history.Recorder
	start time.Time // the recorder's zero, to place the link's readings in run time

	mu    sync.Mutex
	conns map[uint64]*landingConn // connections with a command begun and not yet complete
	got   []landing
}

// landingConn decodes what one connection's hold delivered late.
type landingConn struct {
	r    *resp.Reader
	next int64 // the offset that continues what r was fed
}

// landing is one command delivered late.
type landing struct {
	instance string
	command  string        // abbreviate(args), as Op.Command
	read     time.Duration // when the link read the chunk that completed it
	landed   time.Duration // when the hold delivered that chunk
}

// landSendSlack is how long after an operation was over (answered, or given up on) the link may still
// read its command: a client writes a command before it waits for the reply, and the link reads it at
// once, but a loaded harness may schedule the link's reader late.
const landSendSlack = 250 * time.Millisecond

func newLandings(rec *history.Recorder, start time.Time) *landings {
	return &landings{rec: rec, start: start, conns: map[uint64]*landingConn{}}
}

// observe asks link to report what its holds deliver late, as the commands of instance. Nothing is
// reported by a link that cannot (chaos.ObserveHeld).
func (l *landings) observe(link chaos.Link, instance string) {
	chaos.ObserveHeld(link, func(h chaos.Held) { l.held(instance, h) })
}

// held decodes a chunk delivered late. A chunk that does not continue the bytes fed before (data went
// through on time in between) starts the connection's decoding afresh. Chunks nearly always begin at a
// command; one that does not (a command split between a chunk on time and a late one) decodes to
// nothing, or to a command nobody sent, which no operation matches.
func (l *landings) held(instance string, h chaos.Held) {
	read, landed := h.Read.Sub(l.start), h.Delivered.Sub(l.start)
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conns[h.Conn]
	if c == nil || c.next != h.Offset {
		c = &landingConn{r: resp.NewCommandReader(resp.Limits{})}
		l.conns[h.Conn] = c
	}
	c.next = h.Offset + int64(len(h.Data))
	c.r.Feed(h.Data)
	broken := false
	for {
		args, ok, err := c.r.NextCommand()
		if err != nil || !ok {
			broken = err != nil
			break
		}
		if len(args) == 0 || housekeeping(commandName([]any{args[0]})) {
			continue
		}
		a := make([]any, len(args))
		for i, s := range args {
			a[i] = s
		}
		l.got = append(l.got, landing{instance: instance, command: abbreviate(a), read: read, landed: landed})
	}
	if broken || c.r.Buffered() == 0 {
		// Nothing begun (or nothing readable): the next chunk starts afresh, as after a gap.
		delete(l.conns, h.Conn)
	}
}

// resolve matches the landings reported so far to the recorded operations and sets their Landed
// (history.Recorder.SetLanded). It returns how many it set. Called once the instances are gone, when
// every operation is recorded.
func (l *landings) resolve() int {
	l.mu.Lock()
	got := l.got
	l.got = nil
	l.mu.Unlock()
	if len(got) == 0 {
		return 0
	}
	type key struct{ instance, command string }
	type cand struct {
		seq     int64
		at      time.Duration
		over    time.Duration // when the call was over: answered, or given up on (0: not recorded)
		landed  time.Duration
		matched bool
	}
	ops := map[key][]*cand{}
	for _, e := range l.rec.Events() { // by At, then Seq
		if e.Op == nil || e.Instance == "" || e.Op.Command == "" {
			continue
		}
		over := e.End
		if over == history.Infinity {
			over = e.Op.GaveUp
		}
		k := key{e.Instance, e.Op.Command}
		ops[k] = append(ops[k], &cand{seq: e.Seq, at: e.At, over: over})
	}
	slices.SortStableFunc(got, func(a, b landing) int {
		return cmp.Or(cmp.Compare(a.read, b.read), cmp.Compare(a.landed, b.landed))
	})
	var touched []*cand
	for _, ld := range got {
		var free, resent *cand // the latest unmatched, and the latest matched, that could have sent it
		for _, o := range ops[key{ld.instance, ld.command}] {
			if o.at > ld.read {
				break
			}
			switch {
			case o.over > 0 && ld.read > o.over+landSendSlack: // over before the link read it
			case o.matched:
				if resent == nil || o.at > resent.at {
					resent = o
				}
			case free == nil || o.at > free.at: // the latest; the first sent of a pipeline's equals
				free = o
			}
		}
		switch {
		case free != nil:
			free.matched, free.landed = true, ld.landed
			touched = append(touched, free)
		case resent != nil:
			resent.landed = max(resent.landed, ld.landed)
		}
	}
	set := 0
	for _, o := range touched {
		if l.rec.SetLanded(o.seq, o.landed) {
			set++
		}
	}
	return set
}
