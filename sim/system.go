package sim

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
)

// System is a lease implementation under test. The harness builds one Instance per virtual instance and
// drives it through the scenario's faults. Tenure's reference manager is one System (package
// systems/reference); a user plugs in their own by implementing this interface and registering it (see
// Register).
type System interface {
	// Name identifies the system in reports and on the command line.
	Name() string
	// NewInstance builds one instance from cfg. It must not touch the backend before Start.
	NewInstance(cfg InstanceConfig) (Instance, error)
}

// Instance is one running member of a fleet.
type Instance interface {
	// Start begins work: registration, acquisition, polling. It returns once the instance is running;
	// work continues in the background until Stop or until ctx is cancelled.
	//
	// Cancelling ctx is how the harness crashes an instance: the instance must stop all work promptly
	// and must not release anything on the way out (a crashed process releases nothing). The harness
	// also cuts the instance's network before cancelling, so nothing it sends afterwards arrives.
	Start(ctx context.Context) error
	// Stop shuts the instance down gracefully: finish in-flight polls, release leases, deregister.
	// The harness may call it while Start is still running (a start that cannot reach the backend), and
	// after cancelling Start's context (a signal stop, see chaos.Stop). A panic in Start or Stop is
	// recovered and fails the fault or start that called it, so the run reports it.
	Stop(ctx context.Context) error
}

// InstanceConfig is everything the harness hands an instance. Systems must take all time from Clock,
// all Redis access through Client and every poll through Poll, or the harness cannot see what they do.
type InstanceConfig struct {
	// ID is the instance's identity (hostname-bootUnixNano-8hex for the reference).
	ID string
	// Seed is this instance's share of the run's seed: seed every random choice (jitter) from it.
	Seed int64
	// Client reaches Redis through this instance's own fault-injecting proxy, with a recording hook.
	Client redis.UniversalClient
	// Nodes is set for a system that asks for a topology (TopologyUser): one plain client per data node,
	// each through this instance's own link to that node, for systems that use the nodes one by one
	// (Redlock). Their operations are recorded with the node's name before the key ("redis-1/poll:lease:
	// ep-0"), since each node holds its own copy of a key.
	Nodes []redis.UniversalClient
	// Clock is this instance's clock (real, or drifting).
	Clock clock.Clock
	// Timing holds the scenario's durations at the run's time scale.
	Timing Timing
	// KeyPrefix namespaces lease, heartbeat and fencing keys ("poll:" by default; per run on an external
	// Redis).
	KeyPrefix string
	// SessionPrefix is where poll targets live ("session:" by default): session:<id> = {"id":..,"paused":..}.
	SessionPrefix string
	// Poll visits an endpoint of the simulated endpoint service with a fencing token (0 for none). It
	// returns when the poll completes, is refused, or ctx ends.
	Poll func(ctx context.Context, endpoint string, token uint64) error
	// Observe receives ownership belief changes; implementations should report them (optional but
	// it makes reports far more useful).
	Observe func(endpoint string, b history.Belief)
	// Logger receives the instance's structured logs.
	Logger *slog.Logger
	// Targets are the poll targets (sessions) that exist when the instance is created, for systems that
	// take a static list (election roles); lease systems discover targets themselves.
	Targets []string
	// Postgres is set for systems that declare UsesPostgres: a connection string that reaches
	// PostgreSQL through this instance's own proxy, and a table name private to the run.
	Postgres *PostgresTarget
}

// PostgresTarget is where a PostgreSQL-backed system under test keeps its state.
type PostgresTarget struct {
	// URL reaches the database through the instance's proxy.
	URL string
	// Table is private to the run and dropped at its end.
	Table string
}

// KindReporter is an optional capability of a System: it names the kind of history it produces,
// "lease" (the default) or "election".
type KindReporter interface {
	Kind() string
}

// Describer is an optional capability of a System: one line on what it is, shown by simrun list.
type Describer interface {
	Description() string
}

// PostgresUser is an optional capability of a System: when UsesPostgres reports true, the harness
// routes each instance's link to PostgreSQL instead of Redis and fills InstanceConfig.Postgres.
type PostgresUser interface {
	UsesPostgres() bool
}

// Timing is the set of durations a scenario runs with, already multiplied by the time scale.
type Timing struct {
	LeaseTTL          time.Duration
	RenewInterval     time.Duration
	HeartbeatInterval time.Duration
	HeartbeatTTL      time.Duration
	DiscoveryInterval time.Duration
	PollInterval      time.Duration
	// PollDuration is how long one poll of the simulated endpoint takes.
	PollDuration time.Duration
	// OpTimeout bounds each Redis call.
	OpTimeout time.Duration
	// DriftBound is the clock drift rate the system must tolerate (e.g. 0.01 for 1%).
	DriftBound float64
}

// DeadPeerBounder is an optional capability of a System whose backend holds a holding in a session
// rather than in a key that expires (PostgreSQL's advisory locks): it returns how long, at timing t, the
// backend keeps the holding of a holder that is alive but silent (cut off, frozen, half-open) before
// freeing it, plus how long a standby then takes to try again. The checker's bound table uses it in place
// of the lease TTL for such faults (history.Timing.DeadPeer).
type DeadPeerBounder interface {
	DeadPeerBound(t Timing) time.Duration
}

// HandshakeReplier is an optional capability of a System whose Redis client opens a connection with
// other than DefaultHandshakeReplies replies to wait for, one after another, before its first command
// (history.Timing.HandshakeReplies): 0 for a client that sends nothing first, 1 for one that pipelines
// its set-up.
type HandshakeReplier interface {
	HandshakeReplies() int
}

// DefaultHandshakeReplies is what a fresh connection of the clients the harness builds (go-redis
// v9.23, RESP3) waits for before its first command, as the wire recorder showed it against
// redis-server 7.0: the reply to HELLO, then the replies to CLIENT SETINFO (library name and version,
// pipelined). A client's first connection also asks CLIENT MAINT_NOTIFICATIONS, alone, between the
// two; a server that refuses it (7.0 does) is not asked again, so every later connection, the ones a
// fault makes the client open, waits for two. Systems that say nothing (HandshakeReplier), process
// systems among them, are judged with it (ioredis waits for two as well: HELLO and CLIENT SETINFO
// pipelined, then its INFO ready check; redis-py 4 for none): a client that waits for fewer is judged
// as if a hold could cost it more than it does, never less.
const DefaultHandshakeReplies = 2

// OpClassifier is an optional capability of a System: it tells the recorder what a Redis command means
// in the lease model (acquire, renew, release, read). Commands it does not claim fall back to the
// built-in classifier, which understands, on <prefix>lease:<endpoint> keys, SET NX with PX/EX
// (acquire), PEXPIRE/EXPIRE without flags (an unconditional renew), DEL of one key (an unconditional
// release) and GET (read). Scripts (EVAL/EVALSHA) are only modelled when a classifier claims them.
type OpClassifier interface {
	// Classify returns the model operation for args (as go-redis Cmder.Args) and its reply. ok is false
	// for commands it does not recognise. reply is nil and err is set when no reply was seen.
	Classify(args []any, reply any, err error) (op history.Op, ok bool)
}

// BookkeepingReader is an optional capability of an OpClassifier: it names the commands, beyond plain
// read-only commands on keys that are neither lease nor election keys (which the recorder recognises by
// itself), that only read the system's own bookkeeping — typically a read-only script. The recorder
// counts such commands per instance (history.Meta.Counted) instead of recording one event each, so
// that a history grows with decisions, not with the polling of a target list.
type BookkeepingReader interface {
	BookkeepingRead(args []any) bool
}

// WaitConfirmer is an optional capability of an OpClassifier whose system follows some of its writes
// with WAIT numreplicas timeout in the same pipeline and counts such a write only when WAIT answers at
// least numreplicas (lease.Config.WaitReplicas). ConfirmedByWait names the classified operations the
// system treats so. The recorder marks such an operation history.Op.NotReplicated when it was answered
// OK but the first WAIT after it in its pipeline answered fewer replicas than it asked for, or failed.
// Writes the system counts whatever WAIT says (the classifier answers false) stay acknowledged, and so
// do all writes of a classifier without this capability, or followed by a WAIT sent on its own (which
// the recorder cannot tie to a connection).
type WaitConfirmer interface {
	ConfirmedByWait(op history.Op) bool
}
