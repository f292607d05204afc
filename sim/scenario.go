package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// Scenario is one named situation, as data: the fleet, the poll targets, the schedule of faults, and
// what the checker should expect. Times are spec times (lease TTL 30 s); Options.TimeScale compresses
// them.
type Scenario struct {
	// Name is the scenario's name on the command line.
	Name string
	// Description says in a sentence what it shows.
	Description string
	// Instances is the initial fleet size; Endpoints the number of sessions created at the start.
	Instances int
	Endpoints int
	// Duration is how long the run lasts.
	Duration time.Duration
	// Steps is the fault schedule.
	Steps chaos.Schedule
	// Nemesis, when set, adds a random schedule drawn from the seed between its From and To.
	Nemesis *chaos.NemesisOptions
	// Explore, when set, adds a composing schedule (chaos.Explore) drawn from the seed between its From
	// and To: episodes of overlapping faults of different classes. The fleet size, the endpoints, the
	// call bound and the drift bound come from the scenario and its timing.
	Explore *chaos.ExploreOptions
	// Steady lists the windows in which the fleet should be settled (balance, liveness).
	Steady []history.Window
	// ExpectBalance asks the checker for ±1 balance in the steady windows.
	ExpectBalance bool
	// Fencing makes the simulated endpoints refuse stale tokens.
	Fencing bool
	// Timing overrides the spec timing where non-zero (e.g. a poll longer than the TTL).
	Timing Timing
	// Exercises names the invariants this scenario exists to exercise (checker.Inv*): a run that gives
	// one nothing to judge is undecided, not a pass. Failover is added for a scenario whose written steps
	// take endpoints from a chosen instance (see exercises).
	Exercises []string
	// Expect names invariants this scenario is expected to violate (for broken systems' regressions).
	Expect []string
	// NeedsBackendControl is set when a step kills, restarts or pauses the backend.
	NeedsBackendControl bool
	// System is the system this scenario is written for ("election-redis"); empty means any lease
	// system. simrun uses it unless --system is given.
	System string
	// StartJitter bounds, per seed, how much later than the run's start each instance of the initial
	// fleet starts, so that their poll and renewal cycles fall at other phases on each seed: zero means
	// one poll interval, a negative value starts the whole fleet at once.
	StartJitter time.Duration
	// FaultJitter bounds, per seed, how much later than written each step comes when the step states no
	// bound of its own (chaos.Step.Jitter): zero means chaos.DefaultJitter, a negative value pins every
	// such step. Steady windows move with the steps before them, so a scenario's intent holds.
	FaultJitter time.Duration
	// Topology is the Redis deployment the scenario needs: TopologySingle (any backend) or
	// TopologySentinel (a primary, replicas and sentinels the harness controls; see BackendForScenario),
	// TopologyCluster (a Redis Cluster the harness controls), or TopologyIndependent.
	Topology string
	// Outside names the faults of this scenario that lie outside the system's stated assumptions (for
	// the history's header; see history.Assumptions). A pause, and a clock drift beyond the drift bound,
	// are always outside and need not be named.
	Outside []string
}

// SpecTiming is the specification's timing: lease TTL 30 s, renewal 10 s, heartbeat 10 s with TTL 30 s,
// discovery 10 s; each held endpoint polled every 5 s, a poll taking 1 s; Redis calls bounded by 3 s;
// clocks assumed to drift by at most 1%.
func SpecTiming() Timing {
	return Timing{
		LeaseTTL:          30 * time.Second,
		RenewInterval:     10 * time.Second,
		HeartbeatInterval: 10 * time.Second,
		HeartbeatTTL:      30 * time.Second,
		DiscoveryInterval: 10 * time.Second,
		PollInterval:      5 * time.Second,
		PollDuration:      1 * time.Second,
		OpTimeout:         3 * time.Second,
		DriftBound:        0.01,
	}
}

// merged returns t with every zero field taken from base.
func (t Timing) merged(base Timing) Timing {
	pick := func(a, b time.Duration) time.Duration {
		if a != 0 {
			return a
		}
		return b
	}
	out := Timing{
		LeaseTTL:          pick(t.LeaseTTL, base.LeaseTTL),
		RenewInterval:     pick(t.RenewInterval, base.RenewInterval),
		HeartbeatInterval: pick(t.HeartbeatInterval, base.HeartbeatInterval),
		HeartbeatTTL:      pick(t.HeartbeatTTL, base.HeartbeatTTL),
		DiscoveryInterval: pick(t.DiscoveryInterval, base.DiscoveryInterval),
		PollInterval:      pick(t.PollInterval, base.PollInterval),
		PollDuration:      pick(t.PollDuration, base.PollDuration),
		OpTimeout:         pick(t.OpTimeout, base.OpTimeout),
		DriftBound:        t.DriftBound,
	}
	if out.DriftBound == 0 {
		out.DriftBound = base.DriftBound
	}
	return out
}

// scaled multiplies every duration by f. The Redis call bound is never scaled below 250 ms: a loaded
// machine can stall a local round trip for tens of milliseconds, and a spurious timeout is not the
// fault being studied.
func (t Timing) scaled(f float64) Timing {
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	out := Timing{
		LeaseTTL: s(t.LeaseTTL), RenewInterval: s(t.RenewInterval),
		HeartbeatInterval: s(t.HeartbeatInterval), HeartbeatTTL: s(t.HeartbeatTTL),
		DiscoveryInterval: s(t.DiscoveryInterval), PollInterval: s(t.PollInterval),
		PollDuration: s(t.PollDuration), OpTimeout: s(t.OpTimeout), DriftBound: t.DriftBound,
	}
	if out.OpTimeout < 250*time.Millisecond {
		out.OpTimeout = 250 * time.Millisecond
	}
	return out
}

// FailoverBound is the specification's failover bound at timing t: the lease TTL plus
// checker.FailoverTolerance (the bound table's entry for a crash, and the bound of the missed-poll
// window around a scale change). Every fault's own bound comes from the checker's bound table (checker/bounds.go).
func FailoverBound(t Timing) time.Duration {
	return checker.SpecFailoverBound(t.LeaseTTL)
}

// Validate checks a scenario against the options it will run with.
func (s Scenario) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("scenario: name is empty"))
	}
	if s.Instances < 1 {
		errs = append(errs, fmt.Errorf("scenario %s: instances must be at least 1 (got %d)", s.Name, s.Instances))
	}
	if s.Endpoints < 1 {
		errs = append(errs, fmt.Errorf("scenario %s: endpoints must be at least 1 (got %d)", s.Name, s.Endpoints))
	}
	if s.Duration <= 0 {
		errs = append(errs, fmt.Errorf("scenario %s: duration must be positive", s.Name))
	}
	for _, st := range s.Steps {
		if st.At+st.For > s.Duration {
			errs = append(errs, fmt.Errorf("scenario %s: step %q ends after the run (%s)", s.Name, st, s.Duration))
		}
	}
	for _, w := range s.Steady {
		if w.From >= w.To || w.To > s.Duration {
			errs = append(errs, fmt.Errorf("scenario %s: steady window %s..%s must lie inside the run", s.Name, w.From, w.To))
		}
	}
	return errors.Join(errs...)
}

// exercises returns the invariants scenario sc exists to exercise (t is its timing in spec time, as its
// steps are): its own Exercises, and failover when one of its written steps (not a nemesis) can end what
// an instance it names holds (checker.TakesHolding: a crash, a partition, a pause, a stop, ... of a slot
// or of an endpoint's holder): such a run must measure a takeover. An aborted start and an outage are
// left out: the instance an aborted start stops never held anything, and an outage stops every instance
// at once, whose takeovers liveness judges; so is a wire pause, which may never take hold.
func exercises(sc Scenario, t Timing) []string {
	out := append([]string(nil), sc.Exercises...)
	meta := history.Meta{LeaseTTL: t.LeaseTTL, Timing: &history.Timing{RenewInterval: t.RenewInterval, OpTimeout: t.OpTimeout, PollDuration: t.PollDuration, HandshakeReplies: DefaultHandshakeReplies}}
	for _, st := range sc.Steps {
		f := &history.Fault{Name: st.Fault.Name(), Params: map[string]string{}}
		switch x := st.Fault.(type) {
		case chaos.SlowRequests:
			f.Params["delay"], f.Params["match"] = x.Delay.String(), x.Match
		case chaos.SlowReplies:
			f.Params["delay"] = x.Delay.String()
		case chaos.Latency:
			f.Params["latency"], f.Params["jitter"] = x.Latency.String(), x.Jitter.String()
		case chaos.AbortedStart, chaos.Outage, chaos.WirePause:
			// A wire pause takes hold only at a command the system may never send (an atomic renewal
			// sends no GET): whether it ended a holding is the run's to show.
			continue
		}
		if checker.TakesHolding(f, meta) && !slices.Contains(out, checker.InvFailover) {
			out = append(out, checker.InvFailover)
		}
	}
	return out
}
