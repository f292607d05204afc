package checker

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// The lease record: for every lease key, every value written to it, and the stretches of run time in
// which, in some world consistent with the history, the key may hold that value. It is an upper bound,
// built from what the history proves:
//
//   - a write (an acquire, a renewal) that was answered took effect inside its call; one that was not may
//     have taken effect until its latest landing (see effects.landing), or never;
//   - a value is born by an acquire and lives a TTL from the moment it landed; a renewal that lands while
//     it lives extends it; an unconditional renewal (PEXPIRE) extends whatever the key holds;
//   - it is dead, for good, once the history shows the key without it after its birth: a release of it
//     answered, another value granted, a read that saw something else, a renewal of it refused, a wipe;
//   - a replica promoted may lack the deletes before it (the value may be back until it would have
//     expired), and a restore from a snapshot brings back what the snapshot held and drops the rest.
//
// Linearizability (porcupine) checks that the answers fit one key; the record is what the deadlines and
// the stale-belief judgement ask: which values may the key hold at t, and whose.

// value is one holding value of one lease key.
type value struct {
	v      string // the value, as the operations name it (history.Op.Owner)
	writer string // the instance whose write first carried it
	acq    []*history.Event
	renews []*history.Event // renewals carrying it, in call order
	// alive is where the key may hold it, merged and sorted. own is where it may, by its writer's own
	// writes alone: an unconditional renewal another instance sent (a PEXPIRE that found the value in
	// the key) extends alive, not own; extenders names who sent them.
	alive     []span
	own       []span
	extenders []string
	// lastLanding is the latest moment one of its writes may have landed.
	lastLanding time.Duration
}

// until is the end of the last stretch in which the key may hold the value (0 if none).
func (v *value) until() time.Duration {
	if len(v.alive) == 0 {
		return 0
	}
	return v.alive[len(v.alive)-1].to
}

// grantedFrom returns the first acquire of the value sent at or after t that was answered granted, if
// one was.
func (v *value) grantedFrom(t time.Duration) (*history.Event, bool) {
	for _, a := range v.acq {
		if a.At >= t && a.Op.OK && !unanswered(a) && a.End != history.Infinity {
			return a, true
		}
	}
	return nil, false
}

// untilBefore is until when the key may hold the value in stretches that began before t (clipped at t
// when one runs on: what comes after is a holding born at t).
func (v *value) untilBefore(t time.Duration) time.Duration {
	var end time.Duration
	for _, s := range v.alive {
		if s.from < t {
			end = max(end, s.to)
		}
	}
	return end
}

// ownUntilBefore is untilBefore by the value's writer's own writes alone: what a deadline may wait for.
// A value another instance of the system kept alive (an unconditional renewal of whatever the key held)
// keeps it from everyone by the system's own doing, which buys the system no time.
func (v *value) ownUntilBefore(t time.Duration) time.Duration {
	var end time.Duration
	for _, s := range v.own {
		if s.from < t {
			end = max(end, s.to)
		}
	}
	return end
}

// aliveAt reports whether the key may hold the value at t.
func (v *value) aliveAt(t time.Duration) bool {
	for _, s := range v.alive {
		if s.contains(t) {
			return true
		}
	}
	return false
}

// keyRecord is the record of one lease key (of one node's copy, on a backend of independent nodes).
type keyRecord struct {
	key      string
	node     string
	endpoint string
	values   []*value
}

// cut is what the history shows of the key at some instant of [from, to]: without any value (all), or
// without every value but keep (a grant of keep), or without the value only.
type cut struct {
	from, to time.Duration
	all      bool
	keep     string
	only     string
	wipe     bool // a restart that lost the data: everything that landed before to is gone
}

func (c cut) kills(v string) bool {
	switch {
	case c.all || c.wipe:
		return true
	case c.keep != "":
		return v != c.keep
	}
	return c.only == v
}

// revival is a moment after which values the history shows gone may be back: a promotion (the replica
// may have missed the deletes), or a restore from a snapshot taken at snapshot.
type revival struct {
	at       time.Duration
	restore  bool
	snapshot time.Duration
	slots    []slotRange
	node     string
}

// record is the lease record of a history.
type record struct {
	keys []*keyRecord
	byEp map[string][]*keyRecord
}

// newRecord builds the record from the modelled operations of idx, with landings from ef.
func newRecord(idx *index, ef *effects) *record {
	rec := &record{byEp: map[string][]*keyRecord{}}
	type keyOpsList struct {
		kr  *keyRecord
		ops []*history.Event
	}
	byKey := map[string]*keyOpsList{}
	var order []string
	for _, e := range idx.ops {
		switch e.Op.Kind {
		case history.OpAcquire, history.OpRenew, history.OpRelease, history.OpRead:
		default:
			continue
		}
		id := e.Op.Key
		if e.Op.Node != "" {
			id = e.Op.Node + "/" + e.Op.Key
		}
		k := byKey[id]
		if k == nil {
			k = &keyOpsList{kr: &keyRecord{key: e.Op.Key, node: e.Op.Node}}
			byKey[id] = k
			order = append(order, id)
		}
		if k.kr.endpoint == "" {
			k.kr.endpoint = e.Endpoint
		}
		k.ops = append(k.ops, e)
	}
	revivals := revivalsOf(idx)
	for _, id := range order {
		k := byKey[id]
		slices.SortStableFunc(k.ops, byCall)
		buildKey(idx, ef, k.kr, k.ops, revivals)
		rec.keys = append(rec.keys, k.kr)
		if k.kr.endpoint != "" {
			rec.byEp[k.kr.endpoint] = append(rec.byEp[k.kr.endpoint], k.kr)
		}
	}
	return rec
}

// revivalsOf lists the promotions (notes), the restarts from an append-only file (which may lose the
// last second of writes and deletes) and the restores from a snapshot.
func revivalsOf(idx *index) []revival {
	var out []revival
	for _, e := range idx.notes {
		if strings.HasPrefix(e.Note, history.NotePromotion) {
			out = append(out, revival{at: e.At, slots: noteSlots(e.Note)})
		}
	}
	for _, fe := range idx.faults {
		slots, _ := parseSlots(fe.Fault.Params[ShardSlotsParam])
		switch strings.ToLower(fe.Fault.Name) {
		case "redis-restart-aof":
			out = append(out, revival{at: idx.faultEnd(fe), slots: slots, node: fe.Fault.WipedNode})
		case "redis-restart-from-snapshot":
			out = append(out, revival{at: idx.faultEnd(fe), restore: true, snapshot: fe.At, slots: slots, node: fe.Fault.WipedNode})
		}
	}
	return out
}

// noteSlots reads the slots a promotion note names ("promotion: a -> b (slots 0-5460)"); nil when it
// names none (the promotion then concerns every key).
func noteSlots(note string) []slotRange {
	_, rest, ok := strings.Cut(note, "(slots ")
	if !ok {
		return nil
	}
	s, _, _ := strings.Cut(rest, ")")
	rs, err := parseSlots(s)
	if err != nil || len(rs) == 0 {
		return nil
	}
	return rs
}

// ttlOf is the life a write may give a value: the TTL it set (forever when it set none), but no more
// than declared, the lease TTL the system declares (when it declares one). A key a system's own writes
// keep past the TTL it declares keeps the endpoint from everyone by the system's own doing, as another
// instance's extension does, and buys it no time: the bounds are the declared TTL's.
func ttlOf(e *history.Event, declared time.Duration) time.Duration {
	ttl := history.Infinity
	if e.Op.TTL > 0 {
		ttl = e.Op.TTL
	}
	if declared > 0 {
		ttl = min(ttl, declared)
	}
	return addSat(ttl, ExpiryTick)
}

func addSat(t, d time.Duration) time.Duration {
	if d == history.Infinity || t > history.Infinity-d {
		return history.Infinity
	}
	return t + d
}

// buildKey fills kr's values from its operations (in call order).
func buildKey(idx *index, ef *effects, kr *keyRecord, ops []*history.Event, revivals []revival) {
	vals := map[string]*value{}
	get := func(e *history.Event) *value {
		v := vals[e.Op.Owner]
		if v == nil {
			v = &value{v: e.Op.Owner, writer: e.Instance}
			vals[e.Op.Owner] = v
			kr.values = append(kr.values, v)
		}
		return v
	}
	var cuts []cut
	var anyRenews []*history.Event
	for _, e := range ops {
		op := e.Op
		answered := !unanswered(e) && e.End != history.Infinity && !op.NotReplicated && (op.Err == "" || isNilReply(op.Err))
		if op.Err != "" && !isNilReply(op.Err) && noEffect(op.Err) {
			continue // rejected, or never sent: it changed nothing and proved nothing
		}
		end := max(e.End, e.At)
		switch op.Kind {
		case history.OpAcquire:
			if answered && !op.OK {
				continue // refused: the key held something (perhaps this very value, for SET NX)
			}
			get(e).acq = append(get(e).acq, e)
			if answered {
				cuts = append(cuts, cut{from: e.At, to: end, keep: op.Owner})
			}
		case history.OpRenew:
			switch {
			case op.Owner == history.AnyOwner && answered && !op.OK:
				cuts = append(cuts, cut{from: e.At, to: end, all: true})
			case op.Owner == history.AnyOwner:
				anyRenews = append(anyRenews, e)
			case answered && !op.OK:
				cuts = append(cuts, cut{from: e.At, to: end, only: op.Owner})
			default:
				get(e).renews = append(get(e).renews, e)
			}
		case history.OpRelease:
			if !answered {
				if op.Landed > 0 {
					// Seen landing on the wire (held, its reply lost): it took effect then, and the key
					// was without the value (or, for a DEL, without anything) after it.
					c := cut{from: op.Landed, to: op.Landed, only: op.Owner}
					if op.Owner == history.AnyOwner {
						c = cut{from: op.Landed, to: op.Landed, all: true}
					}
					cuts = append(cuts, c)
				}
				continue
			}
			switch {
			case op.Owner == history.AnyOwner:
				// Deleted whatever the key held, or found it empty.
				cuts = append(cuts, cut{from: e.At, to: end, all: true})
			case op.OK || (op.Owner != history.AnyOwner && !op.AbsentOK):
				// Answered: deleted it, or found the key without it.
				cuts = append(cuts, cut{from: e.At, to: end, only: op.Owner})
			}
		case history.OpRead:
			if answered {
				cuts = append(cuts, cut{from: e.At, to: end, all: op.Value == "", keep: op.Value})
			}
		}
	}
	for _, fe := range idx.faults {
		slots, _ := parseSlots(fe.Fault.Params[ShardSlotsParam])
		if fe.Fault.Wipes && wipedBy(kr.node, fe.Fault.WipedNode) && touches(slots, kr.key) && !strings.EqualFold(fe.Fault.Name, "redis-restart-from-snapshot") {
			cuts = append(cuts, cut{from: fe.At, to: idx.faultEnd(fe), wipe: true})
		}
	}
	var revs []revival
	for _, r := range revivals {
		if touches(r.slots, kr.key) && wipedBy(kr.node, r.node) {
			revs = append(revs, r)
		}
	}
	for _, v := range kr.values {
		all := append(slices.Clone(v.renews), anyRenews...)
		v.alive = v.spans(ef, cuts, all, revs, idx.meta.LeaseTTL)
		v.own = v.alive
		var own []*history.Event
		for _, r := range all {
			if r.Instance == v.writer {
				own = append(own, r)
			} else if !slices.Contains(v.extenders, r.Instance) {
				v.extenders = append(v.extenders, r.Instance)
			}
		}
		if len(own) < len(all) {
			v.own = v.spans(ef, cuts, own, revs, idx.meta.LeaseTTL)
		}
	}
}

// spans computes v's stretches from its incarnations (each acquire that carried it, each renewal
// answered as granted), extended by renews.
func (v *value) spans(ef *effects, cuts []cut, renews []*history.Event, revs []revival, declared time.Duration) []span {
	slices.SortStableFunc(renews, byCall)
	landing := func(e *history.Event) (time.Duration, bool) {
		l, ok := ef.landing(e)
		if ok {
			v.lastLanding = max(v.lastLanding, l)
		}
		return l, ok
	}
	var spans []span
	// Each acquire that carried the value is an incarnation; so is each renewal of it answered as
	// granted (a conditional renewal compares the owner: the key held the value when it applied),
	// which shows it present whatever a cut before said (a wipe of another shard, a restart the
	// cluster failed over from).
	births := slices.Clone(v.acq)
	for _, r := range renews {
		if r.Op.Owner == v.v && r.Op.OK && !unanswered(r) && r.End != history.Infinity && !r.Op.NotReplicated {
			births = append(births, r)
		}
	}
	for _, a := range births {
		birthHi, ok := landing(a)
		if !ok {
			continue
		}
		// death: the first moment after which the history shows the key surely without the value.
		death := history.Infinity
		for _, c := range cuts {
			if !c.kills(v.v) {
				continue
			}
			if (c.wipe && birthHi <= c.to) || (!c.wipe && c.from >= birthHi) {
				death = min(death, c.to)
			}
		}
		// extend is the latest the value may live, from end on, with the renewals include picks: a
		// renewal extends it only if it may land while the value lives (before stop, too).
		extend := func(end time.Duration, include func(r *history.Event) bool, stop time.Duration) time.Duration {
			for _, r := range renews {
				if !include(r) {
					continue
				}
				l, ok := landing(r)
				if !ok {
					continue
				}
				if e := ef.earliest(r); e >= min(end, stop) {
					continue // it lands, if at all, once the value is gone: it revives nothing
				}
				end = max(end, addSat(min(l, end), ttlOf(r, declared)))
			}
			return end
		}
		born := addSat(birthHi, ttlOf(a, declared))
		all := func(*history.Event) bool { return true }
		full := extend(born, all, death)
		spans = append(spans, span{ef.earliest(a), min(full, death)})
		for _, r := range revs {
			var e time.Duration
			switch {
			case r.restore && a.At < r.snapshot:
				// What the snapshot held comes back, with the expiry it had then; renewals that land
				// after the restart extend it as they would any value (one that landed between the
				// snapshot and the restart went with the old dataset).
				e = extend(born, func(w *history.Event) bool { return w.At < r.snapshot }, history.Infinity)
				e = extend(e, func(w *history.Event) bool { return w.At >= r.at || ef.earliest(w) >= r.at }, history.Infinity)
			case !r.restore && death < r.at:
				e = extend(born, all, history.Infinity)
			default:
				continue
			}
			// Once back, the value dies again as any value does: by what the history shows after.
			for _, c := range cuts {
				if c.kills(v.v) && c.from >= r.at {
					e = min(e, c.to)
				}
			}
			if e > r.at {
				spans = append(spans, span{r.at, e})
			}
		}
	}
	// A restore replaces the dataset at its restart: what the key held then is gone, and only what the
	// snapshot held (added above) is back.
	for _, r := range revs {
		if !r.restore {
			continue
		}
		for i, s := range spans {
			if s.from < r.at && s.to > r.at {
				spans[i].to = r.at
			}
		}
	}
	return mergeSpans(spans)
}

// noEffect reports whether an error text proves the command never reached the backend (the connection
// was refused or never made, the client was closed or out of connections) or that the backend rejected
// it without executing it (an error reply such as ERR, LOADING, NOSCRIPT, BUSY, MISCONF, READONLY,
// WRONGTYPE, NOAUTH, NOPERM, EXECABORT).
func noEffect(errText string) bool {
	for _, s := range []string{"connection refused", "dial tcp", "dial unix", "connect:", "client is closed",
		"connection pool timeout", "pool timeout"} {
		if strings.Contains(errText, s) {
			return true
		}
	}
	for _, p := range []string{"ERR ", "LOADING", "NOSCRIPT", "BUSY", "MISCONF", "READONLY", "WRONGTYPE",
		"NOAUTH", "NOPERM", "EXECABORT"} {
		if strings.HasPrefix(errText, p) {
			return true
		}
	}
	return false
}

// isNilReply reports whether an error text is how a client reads a null reply (a missing key, a refused
// SET NX): a reply, not an error.
func isNilReply(errText string) bool { return errText == "redis: nil" }

// wipedBy reports whether a wipe of node (empty: of the whole backend) erased the copy of a key on
// keyNode (empty: the node the instances' main client reaches, which is the one a node wipe names).
func wipedBy(keyNode, node string) bool {
	return node == "" || keyNode == "" || keyNode == node
}

// valuesOf returns the values of endpoint ep's keys.
func (rec *record) valuesOf(ep string) []*value {
	var out []*value
	for _, k := range rec.byEp[ep] {
		out = append(out, k.values...)
	}
	return out
}

// modelled reports whether ep's key has modelled operations (acquires or renewals).
func (rec *record) modelled(ep string) bool {
	for _, k := range rec.byEp[ep] {
		if len(k.values) > 0 {
			return true
		}
	}
	return false
}

// sortValues orders values by the start of their first stretch, for messages.
func sortValues(vs []*value) {
	slices.SortStableFunc(vs, func(a, b *value) int {
		var fa, fb time.Duration
		if len(a.alive) > 0 {
			fa = a.alive[0].from
		}
		if len(b.alive) > 0 {
			fb = b.alive[0].from
		}
		return cmp.Compare(fa, fb)
	})
}
