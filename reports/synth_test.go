package reports

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// synthConfig shapes a synthetic run: a fleet holding leases, one crash, one partition, and an instance
// pause after which the paused instance polls once more while the new holder polls (a double poll).
type synthConfig struct {
	instances, endpoints int
	dur, ttl, poll       time.Duration
	seed                 uint64
}

func defaultSynth() synthConfig {
	return synthConfig{instances: 10, endpoints: 100, dur: 60 * time.Second, ttl: 3 * time.Second, poll: 500 * time.Millisecond, seed: 7}
}

// synthSeg is one holding of an endpoint.
type synthSeg struct {
	inst           int
	from, to       time.Duration // belief
	pollFrom       time.Duration // first poll
	pollTo         time.Duration // no poll starts after this
	token          uint64
	endReason      string // "" when the holding ends by a crash or at the end of the run
	releaseOp      bool
	partitionUntil time.Duration // renewals fail between pollTo and this
}

type synthGen struct {
	cfg    synthConfig
	rng    *rand.Rand
	ids    []string
	seq    int64
	ev     []history.Event
	fos    []checker.Failover
	segs   [][]synthSeg
	bound  time.Duration
	tc     time.Duration // crash
	tp, tq time.Duration // partition
	tg, tr time.Duration // pause
	crash  int
	part   int
	paused int
	victim int // the endpoint polled twice
}

func (g *synthGen) jit(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(g.rng.Int64N(int64(d)))
}

func (g *synthGen) add(e history.Event) int64 {
	g.seq++
	e.Seq = g.seq
	g.ev = append(g.ev, e)
	return e.Seq
}

// synthRun builds a history and a checker report consistent with it.
func synthRun(cfg synthConfig) Run {
	g := &synthGen{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 99))}
	n, ttl := cfg.instances, cfg.ttl
	g.bound = ttl + ttl/2
	for i := range n {
		g.ids = append(g.ids, fmt.Sprintf("inst%d-17641080%02d123456789-%08x", i+1, i, g.rng.Uint32()))
	}
	g.tc, g.tp = cfg.dur*3/10, cfg.dur*5/10
	g.tq = g.tp + ttl*5/2
	g.tg = cfg.dur * 8 / 10
	g.tr = g.tg + ttl*14/10
	g.crash, g.part = 2%n, 6%n
	g.victim = min(41, cfg.endpoints-1)
	for i := range n {
		g.add(history.Event{Kind: history.KindLifecycle, At: g.jit(30 * time.Millisecond), Instance: g.ids[i], Lifecycle: &history.Lifecycle{Change: history.LifeStarted}})
	}
	g.add(history.Event{Kind: history.KindFault, At: g.tc, End: g.tc, Fault: &history.Fault{ID: "f1", Name: "crash", Targets: []string{g.ids[g.crash]}, Removes: true}})
	g.add(history.Event{Kind: history.KindLifecycle, At: g.tc, Instance: g.ids[g.crash], Lifecycle: &history.Lifecycle{Change: history.LifeCrashed}})
	g.add(history.Event{Kind: history.KindFault, At: g.tp, End: g.tq, Fault: &history.Fault{ID: "f2", Name: "partition", Targets: []string{g.ids[g.part]}, Params: map[string]string{"direction": "both"}}})
	g.segs = make([][]synthSeg, cfg.endpoints)
	for e := range cfg.endpoints {
		g.planEndpoint(e)
	}
	g.paused = g.holderAt(g.victim, g.tg)
	g.add(history.Event{Kind: history.KindFault, At: g.tg, End: g.tr, Fault: &history.Fault{ID: "f3", Name: "instance-pause", Targets: []string{g.ids[g.paused]}}})
	g.add(history.Event{Kind: history.KindLifecycle, At: g.tg, Instance: g.ids[g.paused], Lifecycle: &history.Lifecycle{Change: history.LifePaused}})
	g.add(history.Event{Kind: history.KindLifecycle, At: g.tr, Instance: g.ids[g.paused], Lifecycle: &history.Lifecycle{Change: history.LifeResumed}})
	for e := range cfg.endpoints {
		g.applyPause(e)
	}
	var viol checker.Violation
	for e := range cfg.endpoints {
		if v, ok := g.emitEndpoint(e); ok {
			viol = v
		}
	}
	g.emitHeartbeats()
	history.Sort(g.ev)
	meta := history.Meta{
		Schema: history.SchemaVersion, Scenario: "gc-pause", Suite: "ci", System: "broken-no-deadline", Kind: "lease",
		Backend: "redis-server 7.0.15 on 127.0.0.1:40123", Seed: int64(cfg.seed), TimeScale: 0.1,
		Instances: n, Endpoints: cfg.endpoints, LeaseTTL: ttl, FailoverBound: g.bound, PollInterval: cfg.poll,
		Steady:        []history.Window{{From: 5 * time.Second, To: g.tc}, {From: g.tc + 2*ttl, To: g.tp}, {From: g.tq + 3*time.Second, To: g.tg}},
		ExpectBalance: true, Duration: cfg.dur, StartedAt: time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC),
		Command: fmt.Sprintf("simrun run gc-pause --seed %d --instances %d --endpoints %d --time-scale 0.1 --system broken-no-deadline", cfg.seed, n, cfg.endpoints),
		Expect:  []string{checker.InvSinglePoller},
	}
	ops, polls := 0, 0
	for i := range g.ev {
		if g.ev[i].Op != nil {
			ops++
		}
		if g.ev[i].Poll != nil {
			polls++
		}
	}
	rep := checker.Report{
		Results: []checker.Result{
			{Invariant: checker.InvAssumptions, Outcome: checker.Pass, Message: "Redis was empty at the start and the history is complete.", Duration: 2 * time.Millisecond},
			{Invariant: checker.InvSinglePoller, Outcome: checker.Violated, Message: "1 endpoint was polled by two instances at once (1 reached the resource).", Violations: []checker.Violation{viol}, Duration: 40 * time.Millisecond},
			{Invariant: checker.InvLinearizable, Outcome: checker.Pass, Message: fmt.Sprintf("%d operations on %d keys are linearizable.", ops, cfg.endpoints), Duration: 1200 * time.Millisecond},
			{Invariant: checker.InvFailover, Outcome: checker.Pass, Message: fmt.Sprintf("%d takeovers, all within the bound of %s.", len(g.fos), fmtDur(g.bound)), Duration: 3 * time.Millisecond},
			{Invariant: checker.InvBalance, Outcome: checker.Pass, Message: "Every instance held within ±1 of the ideal share in steady windows.", Duration: time.Millisecond},
			{Invariant: checker.InvFencing, Outcome: checker.Skipped, Message: "The simulated endpoints did not enforce fencing in this scenario.", Duration: 0},
			{Invariant: checker.InvLiveness, Outcome: checker.Pass, Message: "Every active endpoint was polled in every steady window.", Duration: 5 * time.Millisecond},
		},
		Failovers: g.fos, Balance: g.balance(), Ops: ops, Polls: polls,
	}
	return Run{History: history.History{Meta: meta, Events: g.ev}, Report: rep, Passed: true}
}

// pick chooses a new holder for endpoint e, avoiding the given instances.
func (g *synthGen) pick(e int, avoid ...int) int {
	n := g.cfg.instances
	for k := range n {
		c := (e%n + 1 + e/n + k) % n
		if !slices.Contains(avoid, c) {
			return c
		}
	}
	return -1
}

func (g *synthGen) holderAt(e int, t time.Duration) int {
	for _, s := range g.segs[e] {
		if s.from <= t && t < s.to {
			return s.inst
		}
	}
	return -1
}

// planEndpoint lays out endpoint e's holdings through the crash and the partition.
func (g *synthGen) planEndpoint(e int) {
	n, ttl, dur := g.cfg.instances, g.cfg.ttl, g.cfg.dur
	tok := uint64(1)
	start := 50*time.Millisecond + g.jit(300*time.Millisecond)
	cur := synthSeg{inst: e % n, from: start, pollFrom: start + 10*time.Millisecond, token: tok}
	var out []synthSeg
	next := func(inst int, at time.Duration, fault, name string, faultAt time.Duration) {
		tok++
		s := synthSeg{inst: inst, from: at, pollFrom: at + 10*time.Millisecond + g.jit(20*time.Millisecond), token: tok}
		if fault != "" {
			g.fos = append(g.fos, checker.Failover{FaultID: fault, Fault: name, Endpoint: fmt.Sprintf("ep-%03d", e+1),
				From: g.ids[out[len(out)-1].inst], To: g.ids[inst], FaultAt: faultAt, PolledAt: s.pollFrom,
				Latency: s.pollFrom - faultAt, Bound: g.bound})
		}
		cur = s
	}
	if cur.inst == g.crash && n > 1 {
		cur.to, cur.pollTo = g.tc, g.tc
		out = append(out, cur)
		next(g.pick(e, g.crash), g.tc+ttl+g.jit(ttl/3), "f1", "crash", g.tc)
	}
	if cur.inst == g.part && n > 2 {
		cur.to, cur.pollTo, cur.endReason, cur.partitionUntil = g.tp+ttl*8/10, g.tp+ttl*8/10, "expired", g.tq
		out = append(out, cur)
		next(g.pick(e, g.crash, g.part), g.tp+ttl+g.jit(ttl/3), "f2", "partition", g.tp)
	}
	if e%n == g.part && cur.inst != g.part && n > 2 {
		at := g.tq + time.Second + g.jit(time.Second)
		cur.to, cur.pollTo, cur.endReason, cur.releaseOp = at, at-g.cfg.poll/2, "released", true
		out = append(out, cur)
		next(g.part, at+20*time.Millisecond, "", "", 0)
	}
	cur.to, cur.pollTo = dur, dur
	g.segs[e] = append(out, cur)
}

// applyPause moves the paused instance's endpoints to others after a TTL.
func (g *synthGen) applyPause(e int) {
	segs := g.segs[e]
	last := &segs[len(segs)-1]
	if last.inst != g.paused || last.from > g.tg {
		return
	}
	ttl := g.cfg.ttl
	last.to, last.pollTo, last.endReason = g.tr+30*time.Millisecond, g.tg, "lost"
	inst := g.pick(e, g.crash, g.paused)
	if inst < 0 {
		return
	}
	at := g.tg + ttl + g.jit(ttl/3)
	s := synthSeg{inst: inst, from: at, pollFrom: at + 10*time.Millisecond, pollTo: g.cfg.dur, to: g.cfg.dur, token: last.token + 1}
	if e == g.victim { // phase the new holder's polls so one is in flight when the paused instance wakes up
		pd := g.cfg.poll / 8
		k := (g.tr - pd/2 - s.pollFrom) / g.cfg.poll
		s.pollFrom = g.tr - pd/2 - k*g.cfg.poll
	}
	g.fos = append(g.fos, checker.Failover{FaultID: "f3", Fault: "instance-pause", Endpoint: fmt.Sprintf("ep-%03d", e+1),
		From: g.ids[g.paused], To: g.ids[inst], FaultAt: g.tg, PolledAt: s.pollFrom, Latency: s.pollFrom - g.tg, Bound: g.bound})
	g.segs[e] = append(segs, s)
}
