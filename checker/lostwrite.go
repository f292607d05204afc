package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tenurelabs/tenure/history"
)

// promotion is a replica's promotion to primary, as the history records it (a note beginning with
// history.NotePromotion).
type promotion struct {
	at   time.Duration
	seq  int64
	what string // "redis-0 -> redis-1"
}

// promotions lists the promotions a history records, in time order.
func promotions(events []history.Event) []promotion {
	var out []promotion
	for _, e := range events {
		if e.Kind == history.KindNote && strings.HasPrefix(e.Note, history.NotePromotion) {
			out = append(out, promotion{at: e.At, seq: e.Seq, what: strings.TrimPrefix(e.Note, history.NotePromotion)})
		}
	}
	return out
}

// lostWrite diagnoses a key that has no linearization, on a backend that promoted a replica: it looks
// for an acknowledged write — a successful acquire, renew or release, with a known reply, and not a
// write that WAIT failed to confirm (history.Op.NotReplicated: its outcome is unknown) — whose effect
// should still have held when the operation no linearization could take (stuck) was called, and which
// that operation contradicts: after an acquire or renew, another owner acquired the key, the writer's own
// renew or release found it gone or taken, or a read saw another value; after a release (and no
// acknowledged acquire since), an acquire was refused, a read saw the releaser, or the releaser renewed. When such a write exists and a promotion came between the
// write's call less one lease TTL (the oldest write still in force at the promotion) and the stuck
// operation, the write is reported as lost by that promotion. It is a diagnosis of the likeliest cause
// of the contradiction, not a second proof: the verdict is porcupine's.
func lostWrite(k *keyOps, stuck porcupine.Operation, proms []promotion, ttl time.Duration) (msg string, seqs []int64, ok bool) {
	if len(proms) == 0 {
		return "", nil, false
	}
	sin, sout := stuck.Input.(leaseInput), stuck.Output.(leaseOutput)
	var write *porcupine.Operation
	for i := range k.ops {
		op := &k.ops[i]
		in, out := op.Input.(leaseInput), op.Output.(leaseOutput)
		if out.unknown || out.notReplicated || !out.ok || op.Return >= stuck.Call {
			continue // not acknowledged before the stuck call (no reply, or WAIT did not confirm it)
		}
		switch in.kind {
		case history.OpAcquire, history.OpRenew:
			if time.Duration(op.Return)+in.ttl <= time.Duration(stuck.Call) || !contradicts(in.owner, sin, sout) {
				continue // expired by then anyway, or not at odds with the stuck operation
			}
		case history.OpRelease:
			if !contradictsRelease(in.owner, sin, sout) || acquiredBetween(k, op.Return, stuck.Call) {
				continue
			}
		default:
			continue
		}
		if write == nil || op.Return > write.Return {
			write = op
		}
	}
	if write == nil {
		return "", nil, false
	}
	win := write.Input.(leaseInput)
	// A release of the write's own holding between the write and the stuck call explains the change.
	for _, op := range k.ops {
		in, out := op.Input.(leaseInput), op.Output.(leaseOutput)
		if win.kind != history.OpRelease && in.kind == history.OpRelease && in.owner == win.owner && op.Call > write.Call && op.Call < stuck.Call && (out.ok || out.unknown) {
			return "", nil, false
		}
	}
	// The newest promotion noted between the oldest write still in force and the stuck call; failing
	// that, the first noted at most promotionNoteLag after the stuck operation returned: the harness
	// learns of a promotion from the topology's announcement, which can trail the clients that already
	// talk to the new primary.
	var by *promotion
	for i := range proms {
		p := &proms[i]
		if p.at <= time.Duration(stuck.Call) && p.at >= time.Duration(write.Call)-ttl {
			by = p
		}
	}
	if by == nil {
		for i := range proms {
			p := &proms[i]
			if p.at > time.Duration(stuck.Call) && p.at <= time.Duration(stuck.Return)+promotionNoteLag {
				by = p
				break
			}
		}
	}
	if by == nil {
		return "", nil, false
	}
	msg = fmt.Sprintf(lostWritePrefix+"%s by %s (seq %d, acknowledged at %v) is gone after the promotion %s at %v: %s (seq %d at %v) saw the key without it",
		win.kind, win.owner, win.seq, time.Duration(write.Return).Round(time.Millisecond), by.what, by.at.Round(time.Millisecond),
		sin.kind, sin.seq, time.Duration(stuck.Call).Round(time.Millisecond))
	return msg, []int64{win.seq, by.seq, sin.seq}, true
}

// contradictsRelease reports whether the stuck operation's outcome is impossible once owner released the
// key and nobody acquired it since.
func contradictsRelease(owner string, in leaseInput, out leaseOutput) bool {
	if out.unknown {
		return false
	}
	switch in.kind {
	case history.OpAcquire:
		return !out.ok
	case history.OpRenew:
		return out.ok && in.owner == owner
	case history.OpRead:
		return out.value == owner
	}
	return false
}

// acquiredBetween reports whether an acquire on the key may have succeeded between from and to.
func acquiredBetween(k *keyOps, from, to int64) bool {
	for _, op := range k.ops {
		in, out := op.Input.(leaseInput), op.Output.(leaseOutput)
		if in.kind == history.OpAcquire && (out.ok || out.unknown) && op.Return > from && op.Call < to {
			return true
		}
	}
	return false
}

// promotionNoteLag is how long after an operation answered by a new primary the promotion's note may
// still come: the note is written when the sentinels announce the switch (+switch-master) or the harness
// sees another node serve the slot, and clients that re-resolved the primary on their own were measured
// answering 1–80 ms before it on this loopback topology. A second leaves room for a loaded machine and
// stays far below the time between two faults of any scenario.
const promotionNoteLag = time.Second

// lostWritePrefix begins the message of a violation diagnosed as a lost acknowledged write.
const lostWritePrefix = "lost acknowledged write: "

// contradicts reports whether the stuck operation's outcome is impossible while owner holds the key.
func contradicts(owner string, in leaseInput, out leaseOutput) bool {
	if out.unknown {
		return false
	}
	switch in.kind {
	case history.OpAcquire:
		return out.ok && in.owner != owner
	case history.OpRenew, history.OpRelease:
		return in.owner == owner && !out.ok
	case history.OpRead:
		return out.value != owner
	}
	return false
}
