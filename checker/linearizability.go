package checker

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tenurelabs/tenure/history"
)

// keyOps is the porcupine history of one lease key.
type keyOps struct {
	key      string // the key, with "<node>/" in front for a copy on one of several independent nodes
	node     string
	endpoint string
	ops      []porcupine.Operation
}

// endpointOrKey names the key's endpoint, or the key itself when no operation named one.
func (k *keyOps) endpointOrKey() string {
	if k.endpoint != "" {
		return k.endpoint
	}
	return k.key
}

// locateBudget is how long after the search deadline the checker may still spend locating violations in
// keys already proven non-linearizable.
const locateBudget = 10 * time.Second

// leaseHistory is the part of a history the linearizability model sees.
type leaseHistory struct {
	keys    []keyOps // sorted by key
	clients []string // client id -> instance; the last id is the backend (wipes)
	dropped int      // operations left out because they cannot have reached the backend
	wipes   int      // backend wipes modelled
	unknown int      // operations with an unknown outcome
	// notReplicated counts the writes WAIT did not confirm (history.Op.NotReplicated): indeterminate,
	// within their interval.
	notReplicated int
	bySeq         map[int64]*history.Event
	// promotions are the replica promotions the history records, for the lost-write diagnosis; ttl is
	// the run's lease TTL.
	promotions []promotion
	ttl        time.Duration
}

// buildLeaseHistory turns the modelled operations (acquire, renew, release, read) into porcupine
// operations, one partition per key:
//
//   - an operation with Unknown set, End == Infinity, or an error that does not prove it had no effect
//     (timeouts, resets, EOF, anything unrecognised) gets an unknown outcome and Return = MaxInt64;
//   - a write marked NotReplicated (answered, but WAIT did not confirm it, and the system did not count
//     it) gets an unknown outcome too, but keeps its Return: if it applied, it applied within its
//     interval; it may also never have (a failover discarded it), and it is never an acknowledged write;
//   - an operation whose error proves nothing reached the backend (see noEffect) is dropped;
//   - "redis: nil" is not an error: it is how a missing key or a refused SET NX reads;
//   - OpOther and unrecognised kinds are not modelled;
//   - each fault with Wipes adds, to every key (every copy on the wiped node, see wipedBy), a wipe that empties it at some instant of the fault
//     (a restart from a snapshot: a snapshot and a restore of what it held, each at some instant of the fault)
//     window (the whole rest of the run if the window has no end).
func buildLeaseHistory(idx *index) leaseHistory {
	lh := leaseHistory{bySeq: map[int64]*history.Event{}, promotions: promotions(idx.events), ttl: idx.meta.LeaseTTL}
	clientOf := map[string]int{}
	for _, in := range idx.instances {
		clientOf[in] = len(lh.clients)
		lh.clients = append(lh.clients, in)
	}
	backend := len(lh.clients)
	lh.clients = append(lh.clients, "backend")

	byKey := map[string]*keyOps{}
	for _, e := range idx.ops {
		op := e.Op
		switch op.Kind {
		case history.OpAcquire, history.OpRenew, history.OpRelease, history.OpRead:
		default:
			continue
		}
		errText := op.Err
		if isNilReply(errText) {
			errText = ""
		}
		unknown := op.Unknown || e.End == history.Infinity
		if !unknown && errText != "" {
			if noEffect(errText) {
				lh.dropped++
				continue
			}
			unknown = true
		}
		// Each node of a set of independent nodes holds its own copy of a key: one register per copy.
		id := op.Key
		if op.Node != "" {
			id = op.Node + "/" + op.Key
		}
		in := leaseInput{key: id, kind: op.Kind, owner: op.Owner, ttl: op.TTL, call: int64(e.At), seq: e.Seq, absentOK: op.AbsentOK,
			strict: op.Kind == history.OpAcquire && plainSetNX(op.Command)}
		out := leaseOutput{unknown: unknown, ok: op.OK, value: op.Value}
		switch {
		case !unknown && !op.OK && (op.Kind == history.OpRelease || in.strict) && resetDuring(idx, e):
			// A connection reset while the call was out: the client sent it again (go-redis re-sends
			// after a lost reply, within the call), and a refusal may be the re-send's answer to what
			// the first send did, where sending it again cannot give the first answer: a release that
			// deleted finds nothing, a plain SET NX that set finds its own value and is refused. It
			// may have applied within [call, return], or not. (An acquire that grants its own value
			// again, or a renewal, answers a re-send as it answered the first: its refusal stands.)
			out.unknown = true
			in.ret = int64(max(e.End, e.At))
			lh.unknown++
		case unknown:
			in.ret = math.MaxInt64
			lh.unknown++
		case op.NotReplicated:
			// Answered, but not confirmed by WAIT, and not relied on: it may have applied within
			// [call, return] or (lost at a failover) never, so its outcome is indeterminate, within its
			// known interval.
			out.unknown, out.notReplicated = true, true
			in.ret = int64(max(e.End, e.At))
			lh.notReplicated++
		default:
			in.ret = int64(max(e.End, e.At))
		}
		k := byKey[id]
		if k == nil {
			k = &keyOps{key: id, node: op.Node}
			byKey[id] = k
		}
		if k.endpoint == "" {
			k.endpoint = e.Endpoint
		}
		k.ops = append(k.ops, porcupine.Operation{ClientId: clientOf[e.Instance], Input: in, Call: in.call,
			Output: out, Return: in.ret, Metadata: e.Seq})
		lh.bySeq[e.Seq] = e
	}
	for _, f := range idx.faults {
		if !f.Fault.Wipes {
			continue
		}
		lh.wipes++
		ret := int64(math.MaxInt64)
		if f.End >= f.At && f.End != history.Infinity {
			ret = int64(f.End)
		}
		slots, _ := parseSlots(f.Fault.Params[ShardSlotsParam])
		for _, k := range byKey {
			if !wipedBy(k.node, f.Fault.WipedNode) || !touches(slots, k.key) {
				continue
			}
			if strings.EqualFold(f.Fault.Name, "redis-restart-from-snapshot") && ret != int64(math.MaxInt64) {
				// The snapshot is taken once the fault has begun (its SAVE is under way when the fault is
				// recorded), the restore comes back before it ends: each at some instant of the fault.
				// A restore placed before the snapshot restores nothing, as a wipe.
				snap := leaseInput{key: k.key, kind: opSnapshot, call: int64(f.At), ret: ret, seq: f.Seq}
				restore := leaseInput{key: k.key, kind: opRestore, call: int64(f.At), ret: ret, seq: f.Seq}
				k.ops = append(k.ops,
					porcupine.Operation{ClientId: backend, Input: snap, Call: snap.call, Output: leaseOutput{}, Return: snap.ret, Metadata: f.Seq},
					porcupine.Operation{ClientId: backend, Input: restore, Call: restore.call, Output: leaseOutput{}, Return: restore.ret, Metadata: f.Seq})
				continue
			}
			in := leaseInput{key: k.key, kind: opWipe, call: int64(f.At), ret: ret, seq: f.Seq}
			k.ops = append(k.ops, porcupine.Operation{ClientId: backend, Input: in, Call: in.call,
				Output: leaseOutput{}, Return: ret, Metadata: f.Seq})
		}
		lh.bySeq[f.Seq] = f
	}
	for _, k := range byKey {
		lh.keys = append(lh.keys, *k)
	}
	slices.SortFunc(lh.keys, func(a, b keyOps) int { return cmp.Compare(a.key, b.key) })
	return lh
}

// keyVerdict is porcupine's verdict on one key.
type keyVerdict struct {
	key    *keyOps
	result porcupine.CheckResult
}

// checkLinearizability checks every key's operations against the lease model. Keys are independent, so
// each is checked on its own, in parallel, under one overall deadline. A key whose search is cut short by
// the deadline is Unknown; any key proven non-linearizable makes the invariant Violated.
func checkLinearizability(idx *model, opts Options) Result {
	res := Result{Invariant: InvLinearizable}
	lh := buildLeaseHistory(idx.index)
	total := 0
	for _, k := range lh.keys {
		total += len(k.ops)
	}
	if len(lh.keys) == 0 {
		res.Outcome = Skipped
		res.Message = "no acquire, renew, release or read operations were recorded: nothing to model"
		return res
	}
	if !anyLeaseWrite(idx.index) {
		res.Outcome = Skipped
		res.Message = fmt.Sprintf("no acquire, renew or release was recorded (only %d reads): nothing to judge", total)
		return res
	}
	model := leaseModel()
	model.Partition = nil
	deadline := time.Now().Add(opts.LinearizabilityTimeout)
	verdicts := make([]keyVerdict, len(lh.keys))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				verdicts[i] = keyVerdict{key: &lh.keys[i], result: porcupine.Unknown}
				left := time.Until(deadline)
				if left <= 0 {
					continue
				}
				verdicts[i].result = porcupine.CheckOperationsTimeout(model, lh.keys[i].ops, left)
			}
		}()
	}
	for i := range lh.keys {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	var illegal, unknown []*keyOps
	for _, v := range verdicts {
		switch v.result {
		case porcupine.Illegal:
			illegal = append(illegal, v.key)
		case porcupine.Unknown:
			unknown = append(unknown, v.key)
		}
	}
	notRepl := ""
	if lh.notReplicated > 0 {
		notRepl = fmt.Sprintf(", %d writes WAIT did not confirm taken as indeterminate", lh.notReplicated)
	}
	scope := fmt.Sprintf("%d operations on %d keys (%d with unknown outcome%s, %d wipes, %d dropped as never sent)",
		total, len(lh.keys), lh.unknown, notRepl, lh.wipes, lh.dropped)
	switch {
	case len(illegal) > 0:
		var c, caught collector
		lost := 0
		for i, k := range illegal {
			if i >= opts.MaxViolations || time.Now().After(deadline.Add(locateBudget)) {
				c.add(Violation{At: time.Duration(k.ops[0].Call), Endpoint: k.endpointOrKey(),
					Message: fmt.Sprintf("key %s is not linearizable (not located: too many keys or out of time)", k.key)})
				continue
			}
			v := locateIllegal(model, lh, k, deadline)
			if !strings.HasPrefix(v.Message, lostWritePrefix) {
				c.add(v)
				continue
			}
			lost++
			// The backend lost an acknowledged write at a promotion. That is the backend's doing, and
			// expected, only under a fault declared outside the assumptions that was under way then
			// (its window and a TTL after it); anywhere else it is a violation like any other.
			if v.Outside = idx.scope.explains(v.At, v.At, 0, v.Instances...); len(v.Outside) > 0 {
				caught.add(v)
				continue
			}
			c.add(v)
		}
		res.Caught, res.CaughtTruncated = caught.capped(opts.MaxViolations)
		res.Message = fmt.Sprintf("%d of %d keys have no linearization against a lease key with TTL: the backend (or the recording) "+
			"gave answers no single copy of the key could give; %s", len(illegal), len(lh.keys), scope)
		if lost > 0 {
			res.Message += fmt.Sprintf("; %d of them show a lost acknowledged write at a promotion of a replica", lost)
		}
		res.Outcome = Violated
		res.Violations, res.Truncated = c.capped(opts.MaxViolations)
		if len(c.list) == 0 && len(unknown) == 0 {
			res.Outcome = Caught
			res.Message += fmt.Sprintf(", each under a fault declared outside the assumptions (%s): the backend's loss, expected there",
				strings.Join(res.Caught[0].Outside, ", "))
		}
		if len(unknown) > 0 {
			res.Message += fmt.Sprintf("; %d more keys undecided within %v", len(unknown), opts.LinearizabilityTimeout)
		}
	case len(unknown) > 0:
		res.Outcome = Unknown
		res.Message = fmt.Sprintf("checker timed out after %v on %d of %d keys (first %q): the history is neither proven nor refuted; %s",
			opts.LinearizabilityTimeout, len(unknown), len(lh.keys), unknown[0].key, scope)
	default:
		res.Outcome = Pass
		res.Message = "every key's operations are linearizable against a lease key with TTL: " + scope
	}
	return res
}

// locateIllegal re-runs the search on one non-linearizable key with visualization data and reports the
// first operation that no linearization could take: the one with the earliest return among those left
// out of the longest partial linearization.
func locateIllegal(model porcupine.Model, lh leaseHistory, k *keyOps, deadline time.Time) Violation {
	v := Violation{Endpoint: k.endpointOrKey(), At: time.Duration(k.ops[0].Call),
		Message: fmt.Sprintf("key %s is not linearizable", k.key)}
	left := max(time.Until(deadline), time.Second)
	_, info := porcupine.CheckOperationsVerbose(model, k.ops, left)
	parts := info.PartialLinearizationsOperations()
	if len(parts) == 0 {
		return v
	}
	var longest []porcupine.Operation
	for _, p := range parts[0] {
		if len(p) > len(longest) {
			longest = p
		}
	}
	in := map[int64]bool{}
	for _, op := range longest {
		in[op.Input.(leaseInput).seq] = true
	}
	var stuck *porcupine.Operation
	for i := range k.ops {
		op := &k.ops[i]
		if in[op.Input.(leaseInput).seq] {
			continue
		}
		if stuck == nil || op.Return < stuck.Return || (op.Return == stuck.Return && op.Call < stuck.Call) {
			stuck = op
		}
	}
	if stuck == nil {
		return v
	}
	state := model.Init()
	for _, op := range longest {
		_, state = model.Step(state, op.Input, op.Output)
	}
	sin := stuck.Input.(leaseInput)
	v.At = time.Duration(stuck.Call)
	v.Message = fmt.Sprintf("key %s: %s (seq %d, %v..%s) cannot follow the %d operations before it: the key was then %s",
		k.key, model.DescribeOperation(stuck.Input, stuck.Output), sin.seq, time.Duration(stuck.Call),
		describeReturn(stuck.Return), len(longest), model.DescribeState(state))
	insts := map[string]bool{}
	tail := longest[max(0, len(longest)-3):]
	for _, op := range append(slices.Clone(tail), *stuck) {
		seq := op.Input.(leaseInput).seq
		v.Events = append(v.Events, seq)
		if e := lh.bySeq[seq]; e != nil && e.Instance != "" {
			insts[e.Instance] = true
		}
	}
	if msg, seqs, ok := lostWrite(k, *stuck, lh.promotions, lh.ttl); ok {
		v.Message = msg + "; " + v.Message
		for _, seq := range seqs {
			if !slices.Contains(v.Events, seq) {
				v.Events = append(v.Events, seq)
			}
			if e := lh.bySeq[seq]; e != nil && e.Instance != "" {
				insts[e.Instance] = true
			}
		}
	}
	for in := range insts {
		v.Instances = append(v.Instances, in)
	}
	sort.Strings(v.Instances)
	return v
}

func describeReturn(ret int64) string {
	if ret == math.MaxInt64 {
		return "no reply"
	}
	return time.Duration(ret).String()
}

// anyLeaseWrite reports whether the history holds an acquire, renew or release: without one there is
// no lease whose history could fail to be linearizable.
func anyLeaseWrite(idx *index) bool {
	for _, e := range idx.ops {
		switch e.Op.Kind {
		case history.OpAcquire, history.OpRenew, history.OpRelease:
			return true
		}
	}
	return false
}

// plainSetNX reports whether a command, as the history records it, is a plain SET ... NX: Redis refuses
// it when the key exists, whatever its value, the caller's own included.
func plainSetNX(command string) bool {
	f := strings.Fields(strings.ToLower(command))
	return len(f) > 3 && f[0] == "set" && slices.Contains(f[3:], "nx")
}

// resetDuring reports whether a connection reset hit op e's instance while the call was out.
func resetDuring(idx *index, e *history.Event) bool {
	for _, f := range idx.faults {
		if !strings.EqualFold(f.Fault.Name, "conn-reset") || f.At > e.End || idx.faultEnd(f) < e.At {
			continue
		}
		if len(f.Fault.Targets) == 0 || slices.Contains(f.Fault.Targets, e.Instance) {
			return true
		}
	}
	return false
}
