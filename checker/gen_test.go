package checker

import (
	"container/heap"
	"fmt"
	"math/rand"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// genConfig shapes a simulated lease workload.
type genConfig struct {
	keys, clientsPerKey, instances, opsPerKey int
	ttl                                       time.Duration
	unknownRate                               float64 // fraction of operations whose reply is lost
	wipes                                     int     // backend restarts that lose every key
}

// genResult is a generated history and, for mutation tests, the indices (into Events) of acquires that
// were refused while another owner's lease had at least 50 ms left.
type genResult struct {
	h             history.History
	clearRefusals []int
}

// simEvent is one step of the workload simulation: a client calling, an operation applying on the key,
// or an operation returning.
type simEvent struct {
	at    time.Duration
	order int64
	do    func()
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].order < q[j].order
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// genLeaseHistory simulates cfg.keys lease keys, each contended by a few instances that acquire, renew
// (every TTL/3), release and read, with operations taking effect at a random instant of their interval
// on a real key with a TTL. The result is linearizable by construction.
func genLeaseHistory(rng *rand.Rand, cfg genConfig) genResult {
	var res genResult
	var events []history.Event
	seq := int64(0)
	q := &simQueue{}
	order := int64(0)
	schedule := func(at time.Duration, do func()) {
		order++
		heap.Push(q, simEvent{at: at, order: order, do: do})
	}
	type keyState struct {
		owner  string
		expire time.Duration
		ops    int
	}
	var all []*keyState
	for range cfg.wipes {
		at := time.Duration(rng.Int63n(int64(cfg.ttl) * int64(cfg.opsPerKey) / int64(3*cfg.clientsPerKey)))
		end := at + time.Duration(rng.Int63n(int64(cfg.ttl)))
		wipeAt := at + time.Duration(rng.Int63n(int64(end-at)+1))
		schedule(wipeAt, func() {
			for _, ks := range all {
				ks.owner = ""
			}
		})
		seq++
		events = append(events, history.Event{Seq: seq, Kind: history.KindFault, At: at, End: end,
			Fault: &history.Fault{ID: fmt.Sprintf("f%d", seq), Name: "redis-restart", Wipes: true}})
	}
	for k := range cfg.keys {
		ep := fmt.Sprintf("e%d", k)
		name := "poll:lease:" + ep
		ks := &keyState{}
		all = append(all, ks)
		for c := range cfg.clientsPerKey {
			inst := fmt.Sprintf("inst-%d", rng.Intn(cfg.instances))
			if c == 0 {
				inst = fmt.Sprintf("inst-%d", k%cfg.instances)
			}
			inst = fmt.Sprintf("%s/%d", inst, c) // distinct owners per key
			held := time.Duration(-1)            // local validity deadline, -1 when not held
			var call func(at time.Duration)
			call = func(at time.Duration) {
				if ks.ops >= cfg.opsPerKey {
					return
				}
				ks.ops++
				op := history.Op{Key: name, Owner: inst, TTL: cfg.ttl}
				switch r := rng.Float64(); {
				case r < 0.1:
					op.Kind, op.Owner, op.TTL = history.OpRead, "", 0
				case held >= at && r < 0.15:
					op.Kind, op.TTL = history.OpRelease, 0
				case held >= at:
					op.Kind = history.OpRenew
				default:
					op.Kind = history.OpAcquire
				}
				dur := time.Duration(200+rng.Intn(2800)) * time.Microsecond
				if rng.Intn(50) == 0 {
					dur = time.Duration(5+rng.Intn(40)) * time.Millisecond
				}
				applyAt := at + time.Duration(rng.Int63n(int64(dur)+1))
				unknown := rng.Float64() < cfg.unknownRate
				applies := !unknown || rng.Intn(2) == 0
				if unknown && rng.Intn(2) == 0 {
					applyAt += time.Duration(rng.Int63n(int64(2 * cfg.ttl))) // a request delivered late
				}
				var margin time.Duration
				schedule(applyAt, func() {
					if !applies {
						return
					}
					alive := ks.owner != "" && applyAt < ks.expire
					switch op.Kind {
					case history.OpRead:
						if alive {
							op.Value = ks.owner
						}
						op.OK = true
					case history.OpAcquire:
						if !alive || ks.owner == inst {
							ks.owner, ks.expire, op.OK = inst, applyAt+cfg.ttl, true
						} else {
							margin = ks.expire - applyAt
						}
					case history.OpRenew:
						if alive && ks.owner == inst {
							ks.expire, op.OK = applyAt+cfg.ttl, true
						}
					case history.OpRelease:
						if alive && ks.owner == inst {
							ks.owner, op.OK = "", true
						}
					}
				})
				schedule(at+dur, func() {
					seq++
					rec := op // a late-applying request must not change what the client saw
					e := history.Event{Seq: seq, Kind: history.KindOp, At: at, End: at + dur, Instance: inst, Endpoint: ep, Op: &rec}
					if unknown {
						e.End, rec.Unknown, rec.OK, rec.Value, rec.Err = history.Infinity, true, false, "", "i/o timeout"
						held = -1
					} else if rec.OK && (rec.Kind == history.OpAcquire || rec.Kind == history.OpRenew) {
						held = at + cfg.ttl*9/10
					} else if rec.Kind != history.OpRead {
						held = -1
					}
					if rec.Kind == history.OpAcquire && !rec.OK && !unknown && margin > 50*time.Millisecond {
						res.clearRefusals = append(res.clearRefusals, len(events))
					}
					events = append(events, e)
					next := cfg.ttl / 3
					if held < 0 {
						next = cfg.ttl/3 + time.Duration(rng.Int63n(int64(cfg.ttl/3)))
					}
					call(at + dur + next)
				})
			}
			start := time.Duration(rng.Int63n(int64(cfg.ttl)))
			schedule(start, func() { call(start) })
		}
	}
	for q.Len() > 0 {
		heap.Pop(q).(simEvent).do()
	}
	// Events were appended in return order; index them by Seq, then sort by call time as a recorder would.
	byIdx := map[int64]int{}
	for i, e := range events {
		byIdx[e.Seq] = i
	}
	refused := map[int64]bool{}
	for _, i := range res.clearRefusals {
		refused[events[i].Seq] = true
	}
	seq++
	events = append(events, history.Event{Seq: seq, Kind: history.KindPoll, At: 0, End: time.Millisecond,
		Instance: "inst-0/0", Endpoint: "e0", Poll: &history.Poll{Outcome: history.PollOK}})
	history.Sort(events)
	res.clearRefusals = res.clearRefusals[:0]
	for i, e := range events {
		if refused[e.Seq] {
			res.clearRefusals = append(res.clearRefusals, i)
		}
	}
	res.h = history.History{Meta: newBuilder().meta, Events: events}
	res.h.Meta.Duration = events[len(events)-1].At
	return res
}
