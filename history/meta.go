package history

import "time"

// Meta is the header of a history: what was run, with which parameters and which seed. The checker takes
// its bounds from here, so a saved history is judged exactly as it was when it was recorded.
type Meta struct {
	// Schema is SchemaVersion at the time of writing.
	Schema int `json:"schema"`
	// Scenario is the scenario's name.
	Scenario string `json:"scenario"`
	// Suite is the suite the scenario ran in, if any.
	Suite string `json:"suite,omitempty"`
	// System is the name of the system under test ("reference", "broken-no-deadline", ...).
	System string `json:"system"`
	// Kind is "lease" or "election".
	Kind string `json:"kind"`
	// Backend describes the backend ("redis-server 7.0.15 on 127.0.0.1:40123", "miniredis", ...).
	Backend string `json:"backend"`
	// Seed drives every random choice of the run.
	Seed int64 `json:"seed"`
	// TimeScale multiplies every spec duration (0.1 runs ten times faster).
	TimeScale float64 `json:"time_scale"`
	// Instances is the initial fleet size; Endpoints the number of poll targets (roles for election).
	Instances int `json:"instances"`
	Endpoints int `json:"endpoints"`
	// LeaseTTL is the lease TTL at this time scale.
	LeaseTTL time.Duration `json:"lease_ttl"`
	// FailoverBound is the longest acceptable time from a fault to the next poll of an affected endpoint
	// by a live instance, at this time scale.
	FailoverBound time.Duration `json:"failover_bound"`
	// HandoffBound, when set, is the longest acceptable time from a graceful stop to the first poll of
	// each endpoint the stopped instance held by its next owner, at this time scale; zero judges a
	// graceful stop by FailoverBound, as a crash.
	HandoffBound time.Duration `json:"handoff_bound,omitempty"`
	// PollInterval is how often a holder polls each endpoint it holds, at this time scale.
	PollInterval time.Duration `json:"poll_interval"`
	// Timing is the rest of the timing the system was given, at this time scale. The checker derives
	// each fault's bound from it (checker.BoundFor). Nil in older histories, which are judged by
	// FailoverBound and HandoffBound as recorded.
	Timing *Timing `json:"timing,omitempty"`
	// DiscoveryInterval is how often, at most, the system is told to look for new, paused and removed
	// targets (its session scan), at this time scale; zero in older histories. A paused session may be
	// polled until the system's next scan has seen the pause.
	DiscoveryInterval time.Duration `json:"discovery_interval,omitempty"`
	// Fencing is set when the simulated endpoints refused stale tokens.
	Fencing bool `json:"fencing"`
	// Steady lists the windows in which the fleet is expected to be settled: balance and liveness are
	// judged there.
	Steady []Window `json:"steady,omitempty"`
	// ExpectBalance is set when the scenario expects ±1 balance in steady windows.
	ExpectBalance bool `json:"expect_balance,omitempty"`
	// Duration is how long the run lasted.
	Duration time.Duration `json:"duration"`
	// StartedAt is the wall-clock start, for the reader only.
	StartedAt time.Time `json:"started_at"`
	// Command reproduces the run.
	Command string `json:"command,omitempty"`
	// Interrupted is set when the run was stopped early (Ctrl-C): the history is partial.
	Interrupted bool `json:"interrupted,omitempty"`
	// Virtual is set on a run in virtual time: in a bubble whose clock stands still while code runs,
	// against an in-memory Redis (event times are the bubble's; StartedAt is still the wall clock's).
	Virtual bool `json:"virtual,omitempty"`
	// Assumptions are what the system under test relies on in this run: the checker judges every
	// violation against them (inside them a violation is a defect; outside them it is expected, and
	// the question is whether it was caught).
	Assumptions Assumptions `json:"assumptions"`
	// Counted holds the backend commands that were counted instead of recorded one event each, per
	// instance and command name ("get", "scan", "pttl", "evalsha" ...): reads of the system's own
	// bookkeeping that no invariant is judged on — its scans of the fleet and of the targets, its reads
	// of session keys and heartbeats, its change-counter reads. They answered without error; every
	// command on a lease or election key, every write, and every command that failed or went unanswered
	// is recorded as an event. Nil in older histories (which recorded everything).
	Counted map[string]map[string]int64 `json:"counted,omitempty"`
	// Exercises names the invariants this scenario exists to exercise: a run that gives one of them
	// nothing to judge (a crash-failover run with no measured takeover) is undecided, not a pass.
	Exercises []string `json:"exercises,omitempty"`
	// Expect holds the invariants this scenario is expected to violate (for regression scenarios of
	// broken systems); empty for ordinary scenarios.
	Expect []string `json:"expect,omitempty"`
	// NotPromised holds the invariants the system under test does not promise (a lock library that
	// does not spread endpoints does not promise balance): they are judged and shown, and a run passes
	// whatever their verdict.
	NotPromised []string `json:"not_promised,omitempty"`
	// Tick is how often the system says it looks for free endpoints (its system file's promises.tick,
	// at this run's time scale); zero when it does not say. A takeover may wait for it after a key
	// expires: a late failover within it is reported with the bound the system's own intervals imply.
	Tick time.Duration `json:"tick,omitempty"`
	// Lag is the harness's own lateness through the run (see Lag); nil in histories of schema 1 and
	// those recorded without the monitor, which are judged without it.
	Lag *Lag `json:"lag,omitempty"`
}

// CountedBy returns how many commands of instance were counted instead of recorded (see Counted).
func (m Meta) CountedBy(instance string) int64 {
	var n int64
	for _, v := range m.Counted[instance] {
		n += v
	}
	return n
}

// Window is an interval of run time.
type Window struct {
	From time.Duration `json:"from"`
	To   time.Duration `json:"to"`
}

// Contains reports whether t lies in [From, To].
func (w Window) Contains(t time.Duration) bool { return t >= w.From && t <= w.To }

// Assumptions are the conditions under which the system under test claims its guarantees.
type Assumptions struct {
	// DriftBound is the largest clock rate error the system tolerates (0.01: a clock may run 1% fast or
	// slow). A clock fault beyond it is outside the assumptions.
	DriftBound float64 `json:"drift_bound"`
	// Persistence is what the backend keeps across a restart: "none", "rdb" or "aof".
	Persistence string `json:"persistence,omitempty"`
	// Topology is the backend's shape: "single" (one node), "sentinel", "cluster".
	Topology string `json:"topology,omitempty"`
	// Outside names the fault classes of this run that lie outside the system's assumptions (for
	// example "pause": a process frozen between its validity check and its action can only be stopped
	// at the resource, by fencing). A belief overlap caused by one of them and refused at the resource
	// is "expected and caught"; one that reached the resource is still a violation.
	Outside []string `json:"outside,omitempty"`
}

// Timing is the part of a run's timing the bound table needs beyond LeaseTTL and PollInterval, at the
// run's time scale.
type Timing struct {
	// RenewInterval is how often a holder renews: the longest a system goes without a call to its
	// backend while it holds something.
	RenewInterval time.Duration `json:"renew_interval"`
	// HeartbeatInterval is how often an instance announces itself, when the system has heartbeats.
	HeartbeatInterval time.Duration `json:"heartbeat_interval,omitempty"`
	// HeartbeatTTL is how long an instance's heartbeat lasts after it was written: the longest the
	// others may count a silent instance as a member of the fleet. Zero when the system has no
	// heartbeats, and in histories recorded before it was (the checker then takes the lease TTL).
	HeartbeatTTL time.Duration `json:"heartbeat_ttl,omitempty"`
	// OpTimeout bounds each backend call: the longest a system waits before it may know a reply is lost.
	OpTimeout time.Duration `json:"op_timeout"`
	// PollDuration is how long one poll of an endpoint takes.
	PollDuration time.Duration `json:"poll_duration"`
	// DeadPeer, when set, is how long the system's backend keeps a holding whose holder is alive but
	// silent (cut off, frozen, half-open) before it frees it: a session-based backend's bound (the
	// PostgreSQL election's idle-session and keepalive timeouts plus its retry interval). Zero means
	// the lease TTL: a key that expires.
	DeadPeer time.Duration `json:"dead_peer,omitempty"`
	// HandshakeReplies is how many replies a fresh connection's set-up waits for, one after another,
	// before its first command is sent (go-redis v9.23 against redis-server 7.0: HELLO, then CLIENT
	// SETINFO twice pipelined: 2). A call that has to open a connection waits for HandshakeReplies + 1
	// replies, so a delay on every reply costs it that many times over. Zero in histories recorded before it was recorded.
	HandshakeReplies int `json:"handshake_replies,omitempty"`
}
