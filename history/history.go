// Package history is the recorded account of one harness run: every backend operation on lease keys,
// every poll that reached (or was refused by) a simulated endpoint, every fault, every instance lifecycle
// change and every ownership belief a system under test reported.
//
// A history is the single interface between the simulator (which writes it), the checker (which judges
// it) and the reports (which draw it). It is saved as JSON Lines: the first line is the Meta header, every
// further line one Event. A saved history can be re-checked without the simulator.
//
// All times are durations since the start of the run on the harness's monotonic clock, never wall-clock
// readings, so events from different instances (which may run drifting clocks) are comparable.
package history

import (
	"time"
)

// SchemaVersion is written into every Meta header. Readers refuse a history with a newer version.
//
// Versions: 1, the first; 2 adds Meta.Lag, the harness's own scheduling lag through the run, which the
// checker weighs timing verdicts against. A version 1 history has no lag data and is judged as it was.
// 3 adds Op.GaveUp, when the caller of an operation without a reply got its failure, by which the
// checker judges blind writes; an older history has no blind-write verdict (skipped). 4 adds Op.Landed
// (when a command held on the wire reached the backend), Timing.HeartbeatTTL and the CPU the system's
// own processes used (Lag.CPUs, LagSample.System); an older history has none of them, and the checker
// derives what it needs from the fault log and the lease TTL instead.
const SchemaVersion = 4

// Kind names what an Event records.
type Kind string

// The event kinds.
const (
	KindOp        Kind = "op"        // a backend operation (Redis command or PostgreSQL call)
	KindPoll      Kind = "poll"      // a poll of a simulated endpoint, or a leader action on a resource
	KindFault     Kind = "fault"     // a fault window [At, End]
	KindLifecycle Kind = "lifecycle" // an instance started, stopped, crashed, restarted, paused, resumed
	KindBelief    Kind = "belief"    // the system under test reported gaining or losing ownership
	KindSession   Kind = "session"   // a poll target was added, paused, resumed or removed
	KindNote      Kind = "note"      // free-form marker (phase changes such as "steady" windows)
)

// NotePromotion begins the note that records a replica's promotion to primary in a replicated backend
// ("promotion: redis-0 -> redis-1"), so that reports and the checker can place it on the timeline.
const NotePromotion = "promotion: "

// NoteUnplacedKey begins the note that records a write the recorder could not model: a key that names
// an endpoint, but not as the harness lays its keys out (a library that puts a prefix of its own
// before the names it is given), or a key that names none. The rest says which key and how to map it.
const NoteUnplacedKey = "unplaced key: "

// Event is one line of a history. Exactly one of the typed payloads is set, matching Kind.
type Event struct {
	// Seq is the position in the history, assigned by the recorder; unique and increasing.
	Seq int64 `json:"seq"`
	// Kind says which payload is set.
	Kind Kind `json:"kind"`
	// At is when the event began: an op's call, a poll's start, a fault's start.
	At time.Duration `json:"at"`
	// End is when it ended: an op's return, a poll's end, a fault's end. Zero for instantaneous events.
	// For an operation whose outcome is unknown End is Infinity.
	End time.Duration `json:"end,omitempty"`
	// Instance is the instance the event belongs to, if any.
	Instance string `json:"instance,omitempty"`
	// Endpoint is the endpoint (lease key subject, or election role) the event concerns, if any.
	Endpoint string `json:"endpoint,omitempty"`

	Op        *Op        `json:"op,omitempty"`
	Poll      *Poll      `json:"poll,omitempty"`
	Fault     *Fault     `json:"fault,omitempty"`
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	Belief    *Belief    `json:"belief,omitempty"`
	Session   *Session   `json:"session,omitempty"`
	Note      string     `json:"note,omitempty"`
}

// Infinity marks the End of an operation whose outcome was never observed (timeout, lost reply, crash).
// It follows porcupine's convention for a call that may take effect at any later time.
const Infinity = time.Duration(1<<63 - 1)

// OpKind is the meaning of a backend operation in the lease model.
type OpKind string

// Operation kinds understood by the linearizability model. Anything else is OpOther and is kept in the
// history for the reader but not modelled.
const (
	OpAcquire OpKind = "acquire" // set key to owner with TTL if absent (or already ours)
	OpRenew   OpKind = "renew"   // extend TTL if key holds owner
	OpRelease OpKind = "release" // delete key if it holds owner
	OpRead    OpKind = "read"    // read current owner
	OpOther   OpKind = "other"   // recorded, not modelled (fencing counters, heartbeats, scans)
)

// AnyOwner as an Op's Owner marks a renew or release that does not compare the owner (an unconditional
// PEXPIRE or DEL): it acts on whoever holds the key.
const AnyOwner = "*"

// Op is a backend operation as the instance's client saw it.
type Op struct {
	// Kind is the operation's meaning in the model.
	Kind OpKind `json:"kind"`
	// Key is the backend key (for Redis) or lock name (for PostgreSQL).
	Key string `json:"key"`
	// Node names the node of a set of independent nodes the operation went to, for a system that uses
	// them one by one (Redlock): each node holds its own copy of Key. Empty: the backend as one.
	Node string `json:"node,omitempty"`
	// Owner is the owner value the operation wrote or compared against.
	Owner string `json:"owner,omitempty"`
	// TTL is the time-to-live the operation set, if any.
	TTL time.Duration `json:"ttl,omitempty"`
	// Command is the raw command name and arguments, for the reader (scripts abbreviated).
	Command string `json:"command,omitempty"`
	// OK says whether the operation succeeded (acquired, renewed, released). Meaningless when Unknown.
	OK bool `json:"ok"`
	// Value is what a read returned ("" for no key).
	Value string `json:"value,omitempty"`
	// Unknown is set when no reply was seen: the operation may or may not have taken effect.
	Unknown bool `json:"unknown,omitempty"`
	// GaveUp is, for an operation of unknown outcome, when its caller got the failure (run time): from
	// then on the instance knew that no reply had come. Zero when not recorded (older histories).
	GaveUp time.Duration `json:"gave_up,omitempty"`
	// Landed is when the command reached the backend (run time), when the harness saw it arrive later
	// than it was sent: a request held on the wire lands after its caller may have given up on it, and
	// this is when it took effect (or found nothing to act on). Zero when it was not held, or not seen.
	// For a command the client sent more than once within one call (go-redis's re-sends after a lost
	// reply: one operation in the in-process hook) it is the last of its landings, which may come after
	// End when an earlier send was held while a later one was answered.
	Landed time.Duration `json:"landed,omitempty"`
	// NotReplicated is set on a write that was answered (OK) but that the WAIT sent after it in the
	// same pipeline did not confirm: WAIT reported fewer replicas than it asked for, or failed. It is
	// set only for the writes the system itself counts as done once WAIT confirms them (see
	// sim.WaitConfirmer), so the caller did not rely on this one. The node that answered applied it,
	// but a failover may discard it: the checker treats it as an indeterminate write that may or may
	// not have happened within [At, End], never as an acknowledged one.
	NotReplicated bool `json:"not_replicated,omitempty"`
	// AbsentOK marks a release that also succeeds when the key is already gone (an idempotent release,
	// as the election's: a re-sent release whose first attempt took effect still answers success).
	AbsentOK bool `json:"absent_ok,omitempty"`
	// Err is the client-side error text, if any.
	Err string `json:"err,omitempty"`
}

// PollOutcome says what became of a poll.
type PollOutcome string

// Poll outcomes.
const (
	PollOK        PollOutcome = "ok"        // reached the resource and completed
	PollCancelled PollOutcome = "cancelled" // reached the resource, cut short by the poll's context
	PollRefused   PollOutcome = "refused"   // arrived with a stale fencing token and was refused
	PollFailed    PollOutcome = "failed"    // reached the resource and failed for another reason
)

// Poll is one visit of an instance to an endpoint (or one action of a leader on its resource).
// At is its arrival at the resource, End its completion.
type Poll struct {
	// Token is the fencing token the instance presented; 0 when it presented none.
	Token uint64 `json:"token"`
	// Outcome is what the resource made of it.
	Outcome PollOutcome `json:"outcome"`
	// MaxToken is the highest token the resource had seen for this endpoint when the poll arrived.
	MaxToken uint64 `json:"max_token,omitempty"`
}

// Fault describes one injected fault window.
type Fault struct {
	// ID identifies the fault within the run ("f3").
	ID string `json:"id"`
	// Name is the fault type ("crash", "partition", "redis-restart", ...).
	Name string `json:"name"`
	// Targets are the instances affected; empty means the backend or every instance.
	Targets []string `json:"targets,omitempty"`
	// Params are the fault's parameters for the reader ("latency=200ms", "direction=replies").
	Params map[string]string `json:"params,omitempty"`
	// Wipes is set when the fault erased the backend's data (Redis restarted empty).
	Wipes bool `json:"wipes,omitempty"`
	// WipedNode, on a backend of independent nodes, names the node whose data the fault erased: only
	// operations that went to that node (Op.Node) and those recorded without a node (they went to the
	// node the instances' main client reaches, which is the one wiped) see the wipe. Empty: every key.
	WipedNode string `json:"wiped_node,omitempty"`
	// Removes is set when the fault removes the targets from the fleet for good (crash, stop): their
	// endpoints must then fail over to live instances.
	Removes bool `json:"removes,omitempty"`
	// Err is set when the fault could not be applied or ended as scheduled: the run did not go as
	// written, and no verdict drawn from it is a pass.
	Err string `json:"err,omitempty"`
}

// LifecycleChange names an instance lifecycle transition.
type LifecycleChange string

// Lifecycle transitions.
const (
	LifeStarted LifecycleChange = "started"
	LifeStopped LifecycleChange = "stopped" // graceful stop completed
	LifeCrashed LifecycleChange = "crashed" // killed without release
	LifePaused  LifecycleChange = "paused"  // frozen (GC-like pause)
	LifeResumed LifecycleChange = "resumed"
)

// Lifecycle is an instance lifecycle change.
type Lifecycle struct {
	Change LifecycleChange `json:"change"`
	// ReplacedBy is set on a crash or stop that is part of a restart with a new instance ID.
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// Belief is an ownership belief change the system under test reported.
//
// A belief begins with a Held event and ends at the first of: a Held=false event, the instance's crash or
// stop, or its Deadline. A Held event for a belief already held (same instance, endpoint and token) with a
// later Deadline extends it: that is how a confirmed renewal is recorded (Reason "renewed").
type Belief struct {
	// Held is true when the instance now believes it holds the endpoint, false when it stopped believing.
	Held bool `json:"held"`
	// Token is the fencing token of the holding, if the system has one.
	Token uint64 `json:"token,omitempty"`
	// Reason says why a belief ended ("released", "expired", "lost", "stopped"), began ("acquired") or
	// was extended ("renewed").
	Reason string `json:"reason,omitempty"`
	// Deadline is the run time at which the belief lapses on its own unless extended: the system's local
	// validity deadline, converted to the harness's time base by the recorder (the instance's clock
	// rate is taken into account, so a clock that runs slow gives a later Deadline). Zero when the
	// system reports none.
	Deadline time.Duration `json:"deadline,omitempty"`
	// Until is how a system reports its local validity deadline: a reading of its own clock
	// (InstanceConfig.Clock). The harness converts it into Deadline when it records the event; it is
	// never saved.
	Until time.Time `json:"-"`
}

// Belief reasons with a meaning to the checker.
const (
	ReasonAcquired = "acquired"
	ReasonRenewed  = "renewed"
)

// SessionChange names a change to a poll target.
type SessionChange string

// Session changes.
const (
	SessionAdded   SessionChange = "added"
	SessionPaused  SessionChange = "paused"
	SessionResumed SessionChange = "resumed"
	SessionRemoved SessionChange = "removed"
)

// Session is a change to a poll target made by the harness.
type Session struct {
	Change SessionChange `json:"change"`
}
