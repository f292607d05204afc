package checker

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tenurelabs/tenure/history"
)

// The synthetic operations of the backend: a restart that lost every key (a wipe), and a restart from a
// snapshot (the snapshot taken when the fault began, the restore when it ended).
const (
	opWipe     history.OpKind = "wipe"
	opSnapshot history.OpKind = "snapshot"
	opRestore  history.OpKind = "restore"
)

// leaseInput is one operation on one lease key, as the model sees it. The operation's interval rides
// along because whether the key had expired depends on when, inside [call, ret], the operation applied.
type leaseInput struct {
	key   string
	kind  history.OpKind
	owner string
	ttl   time.Duration
	call  int64
	ret   int64 // math.MaxInt64 when the outcome is unknown
	seq   int64 // the history event, for messages
	// absentOK: a release that also succeeds on an absent or expired key (history.Op.AbsentOK).
	absentOK bool
	// strict: an acquire that is refused when the key already holds the caller's own value (a plain
	// SET NX, as Redis answers it), unlike a script that finds its own value and grants it again.
	strict bool
}

// leaseOutput is what the client saw.
type leaseOutput struct {
	unknown bool   // no reply: any outcome is possible, including no effect at all
	ok      bool   // acquire/renew/release succeeded
	value   string // what a read returned ("" for no key)
	// notReplicated: a write answered OK that WAIT did not confirm (history.Op.NotReplicated); unknown
	// is set too, and the operation keeps its return time.
	notReplicated bool
}

// leaseState is one possible state of a key. The exact instant an operation applied is unknown, so the
// state keeps intervals: the key, if owned, expires at some instant in [expLo, expHi]; and the last
// applied operation took effect no earlier than now (linearization points never go back in time).
// The intervals over-approximate: the model accepts every history a real key could produce, and a few
// more whose operations are within one operation interval of being valid.
type leaseState struct {
	owner        string // "" when the key is absent
	expLo, expHi int64
	now          int64
	// snap is what a snapshot taken in the course of a restart-from-snapshot fault held (its key and
	// expiry, which Redis keeps as an absolute time), until the restore brings it back.
	snap *snapState
	// pendTTL is the TTL of the write that set the expiry when that write's outcome was unknown (its
	// apply instant has no upper bound of its own): every operation linearized after it bounds that
	// instant by its own return, and with it expHi.
	pendTTL time.Duration
}

// snapState is a key as a snapshot held it.
type snapState struct {
	owner        string
	expLo, expHi int64
}

// leaseModel is the porcupine model of one lease key with a TTL, applied at an instant a of each
// operation's [call, return] interval:
//
//   - acquire(owner, ttl) succeeds iff the key is absent or expired at a, or (for an acquire that is not
//     a plain SET NX) holds owner; it then holds owner until a+ttl (a TTL of zero: forever). A refusal
//     leaves the key as it was. A plain SET NX is refused by a key that holds the caller's own value, as
//     Redis refuses it;
//   - renew(owner, ttl) succeeds iff the key holds owner, unexpired; it then expires at a+ttl;
//   - release(owner) succeeds iff the key holds owner, unexpired; it then deletes the key;
//   - with owner history.AnyOwner (an unconditional PEXPIRE or DEL), renew and release act on whoever
//     holds the key; a release marked AbsentOK also succeeds when the key is absent or expired;
//   - read returns the owner, or "" when the key is absent or expired;
//   - a wipe (backend restart with data loss) deletes the key; a restart from a snapshot puts back what
//     the key held when the snapshot was taken, with the expiry it had (Redis stores it as an absolute
//     time: a lease whose TTL ran out meanwhile comes back expired);
//   - an operation with an unknown outcome may have applied (at any instant after its call, or within
//     its interval when it has a return: a write WAIT did not confirm) or not.
//
// It is nondeterministic (an unknown outcome; an expiry either side of an operation's apply instant) and
// becomes a deterministic Model over sets of states through porcupine's power-set construction.
func leaseModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{leaseState{}} },
		Step: func(state, input, output any) []any {
			return stepLease(state.(leaseState), input.(leaseInput), output.(leaseOutput))
		},
		Hash: func(state any) uint64 {
			s := state.(leaseState)
			h := fnv.New64a()
			_, _ = h.Write([]byte(s.owner))
			if s.snap != nil {
				_, _ = h.Write([]byte("\x00" + s.snap.owner))
				_, _ = h.Write([]byte(fmt.Sprint(s.snap.expLo, s.snap.expHi)))
			}
			return h.Sum64() ^ uint64(s.expLo)*31 ^ uint64(s.expHi)*131 ^ uint64(s.now)*1009 ^ uint64(s.pendTTL)*7919
		},
		Equal: func(a, b any) bool {
			x, y := a.(leaseState), b.(leaseState)
			if (x.snap == nil) != (y.snap == nil) || (x.snap != nil && *x.snap != *y.snap) {
				return false
			}
			x.snap, y.snap = nil, nil
			return x == y
		},
		DescribeOperation: describeLeaseOp,
		DescribeState: func(state any) string {
			s := state.(leaseState)
			if s.owner == "" {
				return "absent"
			}
			return fmt.Sprintf("%s until %s", s.owner, describeExpiry(s.expLo, s.expHi))
		},
		DescribeOperationMetadata: func(info any) string {
			if info == nil {
				return ""
			}
			return fmt.Sprintf("history seq %v", info)
		},
	}
	m := nm.ToModel()
	m.Partition = partitionByKey
	return m
}

// stepLease returns every state the key can be in after in applied to s with outcome out. A snapshot
// taken earlier is kept through every operation until a restore or a wipe.
func stepLease(s leaseState, in leaseInput, out leaseOutput) []any {
	if s.owner != "" && s.pendTTL > 0 && in.ret != math.MaxInt64 {
		// The unknown write applied before this operation, which applied by its return.
		s.expHi = min(s.expHi, expiryHi(in.ret, s.pendTTL))
	}
	next := stepKey(s, in, out)
	if s.snap != nil && in.kind != opSnapshot && in.kind != opRestore && in.kind != opWipe {
		for i, n := range next {
			st := n.(leaseState)
			st.snap = s.snap
			next[i] = st
		}
	}
	return next
}

// stepKey is stepLease for the key alone.
func stepKey(s leaseState, in leaseInput, out leaseOutput) []any {
	aLo, aHi := max(in.call, s.now), in.ret
	if aLo > aHi {
		return nil
	}
	// absent: the key may be gone at some instant of [aLo, aHi]; alive: it may still be there.
	absent := s.owner == "" || aHi >= s.expLo
	alive := s.owner != "" && aLo < s.expHi
	// gone is the state after learning the key had expired (or was absent) at the apply instant.
	gone := leaseState{now: aLo}
	if s.owner != "" {
		gone.now = max(aLo, s.expLo)
	}
	// still is s after learning the key was alive at the apply instant.
	still := s
	still.now = aLo
	if s.owner != "" {
		still.expLo = max(s.expLo, aLo)
	}
	// set is the key newly written by in.owner at an instant in [lo, aHi].
	set := func(lo int64) leaseState {
		lo = max(lo, aLo)
		return leaseState{owner: in.owner, expLo: addTTL(lo, in.ttl), expHi: expiryHi(aHi, in.ttl), now: lo, pendTTL: pending(aHi, in.ttl)}
	}

	var next []any
	switch in.kind {
	case opWipe:
		return []any{leaseState{now: aLo}}
	case opSnapshot:
		t := s
		t.now = aLo
		t.snap = &snapState{}
		if s.owner != "" {
			t.snap = &snapState{owner: s.owner, expLo: s.expLo, expHi: s.expHi}
		}
		return []any{t}
	case opRestore:
		if s.snap == nil {
			return []any{leaseState{now: aLo}}
		}
		return []any{leaseState{owner: s.snap.owner, expLo: s.snap.expLo, expHi: s.snap.expHi, now: aLo}}
	case history.OpAcquire:
		okMine := s.owner == "" || (s.owner == in.owner && !in.strict)
		if out.unknown || out.ok {
			switch {
			case okMine:
				next = append(next, set(aLo))
			case absent:
				next = append(next, set(s.expLo))
			}
		}
		if !out.unknown && !out.ok {
			if !okMine && alive {
				next = append(next, still)
			}
		}
	case history.OpRenew, history.OpRelease:
		mine := s.owner != "" && (s.owner == in.owner || in.owner == history.AnyOwner)
		if (out.unknown || out.ok) && mine && alive {
			if in.kind == history.OpRenew {
				r := still
				r.expLo, r.expHi, r.pendTTL = addTTL(aLo, in.ttl), expiryHi(aHi, in.ttl), pending(aHi, in.ttl)
				next = append(next, r)
			} else {
				next = append(next, leaseState{now: aLo})
			}
		}
		if (out.unknown || out.ok) && in.kind == history.OpRelease && in.absentOK && absent {
			next = append(next, gone)
		}
		if !out.unknown && !out.ok {
			switch {
			case !mine:
				u := s
				u.now = aLo
				next = append(next, u)
			case absent:
				next = append(next, gone)
			}
		}
	case history.OpRead:
		switch {
		case out.unknown:
		case out.value == "":
			if absent {
				next = append(next, gone)
			}
		case out.value == s.owner && alive:
			next = append(next, still)
		}
	}
	if out.unknown {
		// The operation may never have applied, or applied and failed: s, with no more known than before,
		// covers both.
		next = append(next, s)
	}
	return next
}

// redisTick is the resolution of Redis's clock for key expiry. A key given a TTL at instant a expires at
// floor_ms(a)+ttl, and Redis counts it expired only once its millisecond clock has passed that value,
// i.e. at the first instant in (a+ttl, a+ttl+1ms]; a script also judges every key by the time it
// started. Without the tick, a refusal a fraction of a millisecond after a+ttl (seen on a loaded
// machine, 0.34 ms) reads as an answer no key could give.
const redisTick = time.Millisecond

// pending is the TTL a write applied at the latest instant a leaves to be bounded by the operations
// after it: its own, when a has no bound (an unknown outcome) and the TTL is finite; 0 otherwise.
func pending(a int64, ttl time.Duration) time.Duration {
	if a == math.MaxInt64 && ttl > 0 {
		return ttl
	}
	return 0
}

// expiryHi is the latest instant at which a key given ttl at the latest instant a expires.
func expiryHi(a int64, ttl time.Duration) int64 {
	if ttl <= 0 {
		return addTTL(a, ttl)
	}
	return addTTL(a, ttl+redisTick)
}

// addTTL is t+ttl, saturating; a TTL of zero or less means the key never expires.
func addTTL(t int64, ttl time.Duration) int64 {
	if ttl <= 0 || t > math.MaxInt64-int64(ttl) {
		return math.MaxInt64
	}
	return t + int64(ttl)
}

func describeExpiry(lo, hi int64) string {
	if lo == math.MaxInt64 {
		return "forever"
	}
	if hi == math.MaxInt64 {
		return fmt.Sprintf("[%v, never]", time.Duration(lo))
	}
	return fmt.Sprintf("[%v, %v]", time.Duration(lo), time.Duration(hi))
}

func describeLeaseOp(input, output any) string {
	in, out := input.(leaseInput), output.(leaseOutput)
	var op string
	switch in.kind {
	case opWipe:
		return "backend wiped"
	case opSnapshot:
		return "backend snapshot taken"
	case opRestore:
		return "backend restored from the snapshot"
	case history.OpAcquire, history.OpRenew:
		op = fmt.Sprintf("%s(%s, %v)", in.kind, in.owner, in.ttl)
	case history.OpRelease:
		op = fmt.Sprintf("release(%s)", in.owner)
	default:
		op = "read()"
	}
	switch {
	case out.notReplicated:
		return op + " -> ok, not confirmed by WAIT (indeterminate)"
	case out.unknown:
		return op + " -> unknown"
	case in.kind == history.OpRead:
		if out.value == "" {
			return op + " -> absent"
		}
		return op + " -> " + out.value
	case out.ok:
		return op + " -> ok"
	default:
		return op + " -> refused"
	}
}

// partitionByKey splits a porcupine history into one partition per lease key, in key order.
func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(leaseInput).key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}
