package chaos

import (
	"fmt"
	"math/rand"
	"time"
)

// ExploreEpisodes lists the episodes the composing nemesis (Explore) draws from. Each composes faults
// of different classes that overlap, aimed at what no single fault reaches:
//
//   - wipe-while-stalled, wipe-while-cut-off, wipe-while-paused: Redis restarts empty while the holder
//     of an endpoint cannot renew (its calls hang, its link is cut both ways, or it is frozen), so it
//     learns of the restart only when its own fault ends, after the others may have (a frozen holder
//     stays frozen until its endpoints have moved: see episode);
//   - snapshot-while-stalled, snapshot-while-cut-off: Redis comes back from a snapshot taken more than a
//     TTL before (every lease of it expired, the epoch key back, the server's run ID new) while the
//     holder cannot renew;
//   - redis-pause-while-stalled: Redis is frozen (data kept) while the holder's calls hang;
//   - late-acquire: the holder of an endpoint crashes, and every survivor's requests are held on the
//     wire past the call bound around the moment the endpoint can be granted again: the acquire that
//     takes it lands after its sender gave up;
//   - late-renewal: the holder's requests are held past its call bound (its renewals land after it
//     gave up on them), and the instance that took the endpoint over crashes while they land;
//   - late-replies-then-stall: an instance's replies come late (inside the call bound on an open
//     connection; a call that opens one waits for its set-up's replies too, and may run out), then its
//     calls hang: only a deadline counted from the request ends its beliefs in time;
//   - crash-during-handoff: an instance stops gracefully and another crashes while the endpoints move;
//   - crash-after-join: an instance joins and the instance it takes endpoints from, or the newcomer,
//     crashes within a poll of the join;
//   - restart-during-start: an instance joins while Redis restarts empty;
//   - stall-slow-clock: an instance's clock runs slow inside the drift bound while its calls hang;
//   - renewal-gap: the holder of an endpoint has its plain PEXPIREs held on the wire for two TTLs (a
//     renewal that compares the holder in a script sends none), is then frozen for more than a TTL,
//     and the instance that took the endpoint over crashes before the held PEXPIREs land;
//   - signal-stop: an instance is stopped as SIGTERM stops it (its start context cancelled first),
//     and another starts a TTL later;
//   - resent-acquire: the fleet's releases are held briefly while a new instance joins, whose replies
//     come late and whose connections are then reset: its acquires are sent again on new
//     connections after the first ones landed;
//   - aborted-start: an instance starts behind a cut link and is stopped before its start returns;
//   - single: one fault of the random nemesis (NemesisKinds), alone.
//
// ExploreExtra lists episodes drawn only when named (ExploreOptions.Episodes): the harness adds them
// for the systems they are meant for.
var ExploreEpisodes = []string{
	"wipe-while-stalled", "wipe-while-cut-off", "wipe-while-paused",
	"snapshot-while-stalled", "snapshot-while-cut-off", "redis-pause-while-stalled",
	"late-acquire", "late-renewal", "late-replies-then-stall",
	"crash-during-handoff", "crash-after-join", "restart-during-start",
	"stall-slow-clock", "renewal-gap", "signal-stop", "resent-acquire", "aborted-start", "single",
}

// ExploreExtra are the episodes Explore knows beyond ExploreEpisodes, drawn only when named:
//
//   - wire-pause: the holder of an endpoint is frozen for a TTL or more at a drawn point of its
//     conversation with Redis, where check-then-act races live (after a read's reply, before a write,
//     after a write's reply: WirePausePoints), at the first command of the kind it sends.
var ExploreExtra = []string{"wire-pause"}

// WirePausePoint is a point of an instance's conversation with Redis a wire pause can take hold at.
type WirePausePoint struct {
	Command string
	After   bool
}

// WirePausePoints are the points the wire-pause episode draws from, each a kind of command so that
// whatever client a system uses sends one: after the reply to a read a renewal or a release decides
// on, before the write it then sends, and after the reply to a write or a script (the last moment a
// holder learns it holds).
var WirePausePoints = []WirePausePoint{
	{"GET|EXISTS|TTL|PTTL|MGET", true},
	{"EXPIRE|PEXPIRE|DEL|UNLINK|SET|SETEX|PSETEX|EVAL|EVALSHA", false},
	{"SET|SETEX|PSETEX|EXPIRE|PEXPIRE|EVAL|EVALSHA", true},
}

// ExploreOptions shape a composing schedule. All times are spec times.
type ExploreOptions struct {
	// From and To bound when episodes may start; every episode ends before To.
	From, To time.Duration
	// Instances is the fleet size at From; Endpoints the sessions (ep-0 ...) whose holders episodes
	// aim at.
	Instances, Endpoints int
	// TTL is the lease TTL and CallBound the bound of one backend call (the timing's OpTimeout): held
	// requests are held past it, late replies stay inside it.
	TTL, CallBound time.Duration
	// DriftBound is the clock drift the system assumes; a slow clock stays inside it.
	DriftBound float64
	// Episodes are the episodes to draw from; empty means all of ExploreEpisodes.
	Episodes []string
	// Singles are the single faults the "single" episode draws from; empty means NemesisKinds.
	Singles []string
	_       struct{}
}

// Explore draws a composing schedule from rng: episodes of overlapping faults of different classes, one
// after another, each followed by time to recover (one and a half TTL). The same rng state yields the
// same schedule. The fleet is kept between 2 and Instances+2 members. Every offset inside an episode is
// drawn, so each seed puts the faults at another phase of the system's cycles.
func Explore(rng *rand.Rand, o ExploreOptions) (Schedule, error) {
	eps := o.Episodes
	if len(eps) == 0 {
		eps = ExploreEpisodes
	}
	for _, e := range eps {
		if !known(ExploreEpisodes, e) && !known(ExploreExtra, e) {
			return nil, fmt.Errorf("chaos: unknown exploration episode %q (known: %v and %v)", e, ExploreEpisodes, ExploreExtra)
		}
	}
	singles := o.Singles
	if len(singles) == 0 {
		singles = NemesisKinds
	}
	if o.TTL <= 0 || o.To <= o.From || o.Instances < 1 || o.Endpoints < 1 {
		return nil, fmt.Errorf("chaos: exploration needs TTL > 0, To > From, an instance and an endpoint")
	}
	callBound := o.CallBound
	if callBound <= 0 {
		callBound = o.TTL / 10
	}
	x := &explorer{rng: rng, o: o, live: o.Instances, callBound: callBound, singles: singles, allowed: map[string]bool{}}
	for _, e := range eps {
		x.allowed[e] = true
	}
	var s Schedule
	at := o.From
	for {
		ep := eps[rng.Intn(len(eps))]
		steps, live := x.episode(ep, at)
		end := at
		for _, st := range steps {
			end = max(end, st.At+st.For)
		}
		if end+o.TTL+o.TTL/2 > o.To {
			break
		}
		s = append(s, steps...)
		x.live = live
		at = end + o.TTL + o.TTL/2 + x.upTo(o.TTL/3)
	}
	return s, nil
}

type explorer struct {
	rng       *rand.Rand
	o         ExploreOptions
	live      int
	callBound time.Duration
	singles   []string
	allowed   map[string]bool // the episodes drawn from: a fallback never brings in another
}

// upTo draws a duration in [0, d].
func (x *explorer) upTo(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(x.rng.Int63n(int64(d) + 1))
}

// between draws a duration in [lo, hi].
func (x *explorer) between(lo, hi time.Duration) time.Duration { return lo + x.upTo(hi-lo) }

// endpoint draws an endpoint whose holder an episode aims at, and the slot aimed at instead when
// nobody holds it at that moment.
func (x *explorer) endpoint() (string, int) {
	return fmt.Sprintf("ep-%d", x.rng.Intn(x.o.Endpoints)), x.rng.Intn(x.live)
}

// blocked is what keeps the holder of of from renewing: its calls hang, its link is cut both ways,
// or it is frozen.
func (x *explorer) blocked(how, of string, slot int) Fault {
	switch how {
	case "cut-off":
		return Partition{Of: of, Slot: slot, OrSlot: true}
	case "paused":
		return Pause{Of: of, Slot: slot, OrSlot: true}
	}
	return Stall{Of: of, Slot: slot, OrSlot: true}
}

// episode returns the steps of one episode starting at at, and the fleet size after it.
func (x *explorer) episode(name string, at time.Duration) (Schedule, int) {
	ttl := x.o.TTL
	live := x.live
	switch name {
	case "wipe-while-stalled", "wipe-while-cut-off", "wipe-while-paused",
		"snapshot-while-stalled", "snapshot-while-cut-off", "redis-pause-while-stalled":
		how := map[string]string{
			"wipe-while-stalled": "stalled", "wipe-while-cut-off": "cut-off", "wipe-while-paused": "paused",
			"snapshot-while-stalled": "stalled", "snapshot-while-cut-off": "cut-off", "redis-pause-while-stalled": "stalled",
		}[name]
		of, slot := x.endpoint()
		hold := x.between(ttl/2, ttl+ttl/2)
		if name[:8] == "snapshot" {
			// The snapshot is taken when the step begins and loaded when it ends. The step lasts more
			// than a TTL, so that no lease of the snapshot is still alive when it is loaded (the
			// checker models a restore as a loss of every lease: a shorter step would bring some back),
			// while the epoch key, which has no TTL, comes back; the holder is blocked across the load.
			// It is blocked shortly before the load (a twentieth to a sixth of a TTL), so that its
			// belief, from a renewal at most a renewal interval before, lasts past the load by half a
			// TTL or more: the window in which a guard shorter than a TTL, or one that ignores the
			// server's run, grants its endpoints to another while it still believes.
			span := ttl + x.between(ttl/30, ttl/3)
			load := at + span
			return Schedule{
				{At: at, For: span, Fault: RedisRestartFromSnapshot{}},
				{At: load - x.between(ttl/20, ttl/6), For: hold, Fault: x.blocked(how, of, slot)},
			}, live
		}
		// The backend fault begins while the holder is blocked, early enough that its writes could
		// still be alive in Redis.
		in := at + x.between(ttl/20, hold/2)
		if how == "paused" {
			// A frozen holder wakes with its old token and acts once before it can look (a pause lies
			// outside every system's assumptions): only fencing can refuse that action, and only once
			// a newer holder has acted. So it stays frozen until the guard the restart arms has run
			// out and its endpoints have moved: the restart within a sixth of a TTL, its guard a TTL
			// from when the fleet learns of it (within notice, under half a TTL), and a few polls.
			in = at + x.between(ttl/20, ttl/6)
			hold = x.between(2*ttl, 2*ttl+ttl/3)
		}
		st := Schedule{{At: at, For: hold, Fault: x.blocked(how, of, slot)}}
		if name[:4] == "wipe" {
			st = append(st, Step{At: in, For: ttl / 10, Fault: RedisRestart{}})
		} else {
			st = append(st, Step{At: in, For: x.between(ttl/10, ttl/2), Fault: RedisPause{}})
		}
		return st, live
	case "late-acquire":
		if live <= 2 {
			return x.episode("restart-during-start", at)
		}
		of, victim := x.endpoint()
		// The crashed holder's lease expires within a TTL of the crash (a renewal interval or less
		// after its last renewal). From a sixth to a quarter of a TTL after the crash, every survivor's
		// requests are held on the wire (one fault each) past the call
		// bound and for less than a TTL. Each survivor's first request in the window is sent at least
		// a sixth of a TTL after the crash and held at least five sixths: it lands after the crashed
		// lease has expired, and the first acquire to land holds the endpoint for an instance that
		// gave up on it. After it, a survivor whose call went unanswered sends only probes until the
		// window ends. The window outlasts every such landing (a retry interval, a third of a TTL at
		// spec timing, then the hold), so that no request sent after it overtakes a held acquire, and
		// by little: an instance blind until the window's end is allowed blind after it to take over
		// (docs/bounds.md), while a held acquire left to expire keeps the endpoint a TTL after it
		// landed.
		from := at + x.between(ttl/6, ttl/4)
		held := x.between(ttl-ttl/6, ttl-ttl/20)
		window := held + ttl/3 + ttl/20
		st := Schedule{{At: at, Fault: Crash{Of: of, Slot: victim, OrSlot: true}}}
		for slot := 0; slot < live-1; slot++ {
			st = append(st, Step{At: from, For: window, Fault: SlowRequests{Slot: slot, Delay: held}})
		}
		return st, live - 1
	case "late-renewal":
		if live <= 2 {
			return x.episode("restart-during-start", at)
		}
		of, slot := x.endpoint()
		held := x.between(x.callBound+x.callBound/2, ttl+ttl/2)
		window := x.between(ttl/3, ttl)
		// The instance that took the endpoint over (its holder after the lease moved) crashes while
		// the held renewals land.
		return Schedule{
			{At: at, For: window, Fault: SlowRequests{Of: of, Slot: slot, OrSlot: true, Delay: held}},
			{At: at + window + x.between(0, held/2), Fault: Crash{Of: of, Slot: x.rng.Intn(live), OrSlot: true}},
		}, live - 1
	case "late-replies-then-stall":
		slot := x.rng.Intn(live)
		late := x.between(x.callBound/4, x.callBound-x.callBound/4)
		span := x.between(ttl, ttl+ttl/2)
		return Schedule{
			{At: at, For: span + ttl/2, Fault: SlowReplies{Slot: slot, Delay: late}},
			{At: at + ttl/2 + x.upTo(ttl/6), For: span, Fault: Stall{Slot: slot}},
		}, live
	case "crash-during-handoff":
		if live <= 3 {
			return x.episode("crash-after-join", at)
		}
		// The crash comes first (it takes effect at once), the graceful stop within a poll of it, so
		// that their handoffs overlap; a crash aimed by slot during a stop could hit the stopping
		// instance itself, which is still in the fleet until its stop returns.
		b, a := x.rng.Intn(live), x.rng.Intn(live-1)
		return Schedule{
			{At: at, Fault: Crash{Slot: b}},
			{At: at + x.upTo(ttl/30), Fault: Stop{Slot: a}},
			{At: at + ttl + x.upTo(ttl/3), Fault: Start{Count: 1}},
		}, live - 1
	case "crash-after-join":
		if live >= x.o.Instances+2 {
			if live > 3 {
				return x.episode("crash-during-handoff", at)
			}
			return x.single(at)
		}
		// An instance the newcomer may take endpoints from (not the newcomer itself: its start may not
		// have returned yet, and a slot it has not taken yet names nobody).
		victim := x.rng.Intn(live)
		return Schedule{
			{At: at, Fault: Start{Count: 1}},
			{At: at + x.upTo(ttl/15), Fault: Crash{Slot: victim}},
		}, live
	case "restart-during-start":
		if live >= x.o.Instances+2 {
			if x.allowed["wipe-while-stalled"] {
				return x.episode("wipe-while-stalled", at)
			}
			return x.episode("crash-during-handoff", at)
		}
		return Schedule{
			{At: at, Fault: Start{Count: 1}},
			{At: at + x.upTo(ttl/15), For: ttl / 10, Fault: RedisRestart{}},
		}, live + 1
	case "renewal-gap":
		if live <= 2 {
			return x.episode("restart-during-start", at)
		}
		// As renewal-gap-pause-crash, at drawn offsets: PEXPIREs held while a renewal interval or two
		// pass, the holder frozen past its lease so the endpoint moves, and its new holder crashed while
		// the held PEXPIREs are still to land (they land two TTLs after they were sent).
		of, slot := x.endpoint()
		gap := x.between(ttl/3, ttl/2)
		pauseAt := at + gap + x.upTo(ttl/15)
		crashAt := pauseAt + x.between(ttl/2+ttl/6, ttl+ttl/6)
		return Schedule{
			{At: at, For: gap, Fault: SlowRequests{Of: of, Slot: slot, OrSlot: true, Delay: 2 * ttl, Match: "pexpire"}},
			{At: pauseAt, For: x.between(ttl+ttl/3, ttl+ttl/2), Fault: Pause{Of: of, Slot: slot, OrSlot: true}},
			{At: crashAt, Fault: Crash{Of: of, Slot: x.rng.Intn(live), OrSlot: true}},
		}, live - 1
	case "signal-stop":
		if live <= 2 {
			return x.episode("restart-during-start", at)
		}
		return Schedule{
			{At: at, Fault: Stop{Slot: x.rng.Intn(live), Signal: true}},
			{At: at + ttl + x.upTo(ttl/3), Fault: Start{Count: 1}},
		}, live
	case "resent-acquire":
		if live >= x.o.Instances+2 {
			return x.single(at)
		}
		// As acquire-resent: the fleet's releases held a fifteenth of a TTL around the join, so the
		// newcomer's first acquires find the keys still held and its later ones land; its replies come
		// a thirtieth of a TTL late, and its connections are reset while they are due, so go-redis
		// sends them again on new connections.
		hold := ttl / 12
		st := Schedule{}
		for slot := 0; slot < live; slot++ {
			st = append(st, Step{At: at, For: hold, Fault: SlowRequests{Slot: slot, Delay: ttl / 15, Match: "release "}})
		}
		join := at + ttl/60
		st = append(st,
			Step{At: join, Fault: Start{Count: 1}},
			Step{At: join + ttl/30, For: hold, Fault: SlowReplies{Slot: live, Delay: ttl / 30}},
			Step{At: join + x.between(ttl/10, ttl/8), Fault: ConnReset{Slot: live}},
		)
		return st, live + 1
	case "aborted-start":
		// As stop-during-start: Stop must make Start give up, and the stopped instance send nothing
		// once its link heals. The instance never joins the fleet.
		return Schedule{{At: at, Fault: AbortedStart{After: x.between(ttl/10, ttl/4)}}}, live
	case "wire-pause":
		// Armed for a third of a TTL (a renewal interval at least, in the shipped timings), the pause
		// then lasts a TTL to one and a half: the step covers both.
		of, slot := x.endpoint()
		p := WirePausePoints[x.rng.Intn(len(WirePausePoints))]
		within, d := ttl/3, x.between(ttl, ttl+ttl/2)
		return Schedule{{At: at, For: within + d, Fault: WirePause{Of: of, Slot: slot, OrSlot: true, Command: p.Command, After: p.After, For: d, Within: within}}}, live
	case "stall-slow-clock":
		slot := x.rng.Intn(live)
		rate := 1 - x.o.DriftBound*0.9
		span := x.between(ttl, ttl+ttl/2)
		return Schedule{
			{At: at, For: span + ttl/2, Fault: Drift{Slot: slot, Rate: rate}},
			{At: at + ttl/3, For: span, Fault: Stall{Slot: slot}},
		}, live
	}
	return x.single(at)
}

// single is one fault of the random nemesis's kinds.
func (x *explorer) single(at time.Duration) (Schedule, int) {
	ttl := x.o.TTL
	live := x.live
	kind := x.singles[x.rng.Intn(len(x.singles))]
	dur := ttl/3 + x.upTo(ttl)
	slot := x.rng.Intn(live)
	switch kind {
	case "crash", "stop":
		if live <= 2 {
			return Schedule{{At: at, Fault: Start{Count: 1}}}, live + 1
		}
		if kind == "crash" {
			return Schedule{{At: at, Fault: Crash{Slot: slot}}}, live - 1
		}
		return Schedule{{At: at, Fault: Stop{Slot: slot}}}, live - 1
	case "start":
		if live >= x.o.Instances+2 {
			return Schedule{{At: at, Fault: Crash{Slot: slot}}}, live - 1
		}
		return Schedule{{At: at, Fault: Start{Count: 1}}}, live + 1
	case "restart":
		return Schedule{{At: at, Fault: Restart{Slot: slot}}}, live
	case "partition":
		return Schedule{{At: at, For: dur, Fault: Partition{Slot: slot}}}, live
	case "one-way-partition":
		return Schedule{{At: at, For: dur, Fault: Partition{Slot: slot, OneWay: true}}}, live
	case "latency":
		lat := ttl / 30 * time.Duration(1+x.rng.Intn(3))
		return Schedule{{At: at, For: dur, Fault: Latency{Slot: slot, Latency: lat, Jitter: lat / 2}}}, live
	case "pause":
		return Schedule{{At: at, For: ttl + ttl/2, Fault: Pause{Slot: slot}}}, live
	case "clock-drift":
		rates := []float64{0.995, 1.005, 1.01}
		return Schedule{{At: at, For: dur, Fault: Drift{Slot: slot, Rate: rates[x.rng.Intn(len(rates))]}}}, live
	case "outage":
		return Schedule{{At: at, For: dur, Fault: Outage{}}}, live
	case "redis-restart":
		return Schedule{{At: at, For: ttl / 10, Fault: RedisRestart{}}}, live
	case "redis-pause":
		return Schedule{{At: at, For: dur, Fault: RedisPause{}}}, live
	}
	return Schedule{{At: at, For: dur, Fault: Stall{Slot: slot}}}, live
}

func known(list []string, k string) bool {
	for _, n := range list {
		if n == k {
			return true
		}
	}
	return false
}
