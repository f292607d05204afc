//go:build tenure_mutants

package mutation

// Mutant is one mechanism of the reference removed, and how the harness shows that it matters.
type Mutant struct {
	Name Name
	// Of is the reference system the mutant is built from and compared with: "reference" (package
	// lease) or "election-redis" (package election).
	Of string
	// Removes says in a phrase what the mutant does instead of the mechanism.
	Removes string
	// Scenarios are the scenarios built to expose the mutant, tried in order on each seed.
	Scenarios []string
	// CaughtBy are the invariants (checker.Inv*) of which any one violated counts as caught.
	CaughtBy []string
	// Mention, when set, must appear in the verdict of the run that catches the mutant: for an
	// invariant as broad as the assumptions, it names the reason.
	Mention string
	// Uncaught, for a mutant that no fault can expose because another mechanism always covers it,
	// says why; Scenarios is then empty.
	Uncaught string
}

// System is the name the mutant is registered under: "mutant-<name>".
func (m Mutant) System() string { return "mutant-" + string(m.Name) }

// Lookup returns the catalogue's entry for n.
func Lookup(n Name) (Mutant, bool) {
	for _, m := range Mutants {
		if m.Name == n {
			return m, true
		}
	}
	return Mutant{}, false
}

// The systems mutants are built from.
const (
	Lease    = "reference"
	Election = "election-redis"
)

// Invariants, as the checker names them.
const (
	assumptions     = "assumptions"
	singleHolder    = "single-holder"
	staleBelief     = "stale-belief"
	singlePoller    = "single-poller"
	stalePoll       = "stale-poll"
	validity        = "validity"
	linearizability = "linearizability"
	failover        = "failover"
	balance         = "balance"
	fencing         = "fencing"
	liveness        = "liveness"
	blindWrite      = "blind-write"
)

// Mutants is the catalogue: every mutant, in the order docs/mutants.md lists them. Adding a mutant is
// adding its name and its entry here, and its code at the mechanism's point in lease or election
// (docs/mutants.md, "Adding a mutant"); the hidden system, the checker-power test and the table of
// docs/mutants.md follow from the entry.
var Mutants = []Mutant{
	// The local validity deadline and how renewal outcomes move it. Each scenario leaves the holder's
	// local deadline as the only thing that can end its belief (a stall, held requests, or held
	// heartbeats after late replies), so a deadline set too late shows as a poll past the lease
	// (validity), or as a belief that outlives the key while another instance holds it.
	{Name: NoDeadline, Of: Lease, Removes: "polls go on until a renewal fails or the holding ends otherwise",
		Scenarios: []string{"stall-past-ttl"}, CaughtBy: beliefs},
	// Counted as confirmed, a timed-out renewal extends the belief by a renewal interval while the
	// request has not reached Redis.
	{Name: TimeoutAsSuccess, Of: Lease, Removes: "a renewal that timed out counts as confirmed",
		Scenarios: []string{"slow-requests-past-ttl"}, CaughtBy: beliefs},
	// Replies 2.5 s late move a deadline counted from the reply 2.5 s past the one counted from the
	// request.
	{Name: DeadlineFromReply, Of: Lease, Removes: "validity counted from the reply instead of the request",
		Scenarios: []string{"late-replies-then-stall"}, CaughtBy: beliefs},
	// A deadline that ignores the drift bound d lasts TTL − margin on the holder's clock; the validity
	// bound is TTL·(1 − d) on that clock (a clock slow within the bound reaches it later in real time, and
	// its key, on Redis's clock, outlives it). The mutant passes it only when d > margin/TTL: 3.3 % with
	// the margin TTL/30, so the spec's 1 % hides it. The scenario declares 5 % and runs clocks 4.5 %
	// slow, where the mutant believes (TTL − margin)/0.955 = 1.012 TTL of real time, past its key.
	{Name: DriftIgnored, Of: Lease, Removes: "validity = TTL − margin, ignoring the drift bound",
		Scenarios: []string{"stall-slow-clock"}, CaughtBy: beliefs},
	// The leader acts on past its deadline while its renewal hangs.
	{Name: ElectionNoCancel, Of: Election, Removes: "the leader context is not cancelled at the deadline",
		Scenarios: []string{"election-leader-stall-redis"}, CaughtBy: beliefs},
	// Redis restarts empty while every instance holds its endpoints. The holders' next renewals are
	// answered "not held": the reference ends each belief there, within a renewal interval and a call
	// bound of the wipe; the mutant believes on until its local deadline, up to TTL − margin after its
	// last renewal, with no value of its own in the key (reported from outside against an earlier
	// design: a holder believed 2.7 s, at a tenth of the spec's timing, after its key was gone). The
	// fresh-dataset guard keeps the others out meanwhile, so only a judgement of beliefs against the
	// keys sees it.
	{Name: LostRenewalKept, Of: Lease, Removes: `a renewal answered "not held" keeps the belief until the local deadline`,
		Scenarios: []string{"redis-restart-empty"}, CaughtBy: []string{staleBelief}},
	{Name: NotFailClosed, Of: Lease, Removes: "a renewal error keeps the belief (until the local deadline)",
		Uncaught: "it keeps the belief only until the local deadline of the last confirmed renewal, which " +
			"ends before that renewal's key can expire in Redis, exactly as the reference's belief does " +
			"while a renewal hangs in stall-past-ttl"},

	// The checks that tie a write to the holding it was sent for. The renewal mutants send a plain
	// PEXPIRE (after a GET, or alone), which extends whoever holds the key. Its harm is to the next
	// holder: a PEXPIRE held on the wire lands after the endpoint moved and keeps the new holder's key
	// alive for a full TTL from its landing. In renewal-gap-pause-crash the new holder has crashed by
	// then, so the takeover comes past the failover bound. (Validity credits an unconditional renewal
	// to its sender only while the sender's own lease held, so the mutants' own polls are not
	// violations: the key still named them when the renewal applied.)
	{Name: RenewUnconditional, Of: Lease, Removes: "renewal as a plain PEXPIRE, no holder check",
		Scenarios: []string{"renewal-gap-pause-crash"}, CaughtBy: []string{failover}},
	{Name: RenewGetThenExpire, Of: Lease, Removes: "renewal as GET, compare in the client, then PEXPIRE",
		Scenarios: []string{"renewal-gap-pause-crash"}, CaughtBy: []string{failover}},
	// A handoff release held on the wire lands after its sender re-acquired the endpoint: a plain DEL,
	// or a release whose value names only the process, deletes the new holding under a holder that
	// still believes, and the instance that prefers the endpoint takes it at once.
	{Name: ReleaseUnchecked, Of: Lease, Removes: "release as a plain DEL, no holder check",
		Scenarios: []string{"release-after-reacquire"}, CaughtBy: []string{singleHolder, singlePoller}},
	{Name: ProcessIdentity, Of: Lease, Removes: "the lease value names the process, not the holding",
		Scenarios: []string{"release-after-reacquire"}, CaughtBy: []string{singleHolder, singlePoller}},
	// An acquire whose reply is lost to a connection reset after it took effect is sent again by
	// go-redis within the same call; the mutant's re-send reports the lease as another's, which no
	// single acquire on that key could have answered.
	{Name: AcquireNotIdempotent, Of: Lease, Removes: `an acquire that finds its own value answers "held by another"`,
		Scenarios: []string{"acquire-resent"}, CaughtBy: []string{linearizability}},
	{Name: ElectionTermUnchecked, Of: Election, Removes: "renew compares the instance, not the term",
		Uncaught: "it differs only when one instance holds a second term while its keeper for the first " +
			"is still alive; an elector runs one keeper at a time and every instance the harness starts " +
			"has a new ID, so only two live processes sharing an instance ID (a deployment error) expose it"},

	// What keeps a fleet's grants apart and its load even.
	//
	// A holder stops, Redis restarts empty and a new instance joins: the assignment moves endpoints
	// whose old holders still believe in them, and only the guard keeps the new owners from being
	// granted them at once.
	{Name: NoGuard, Of: Lease, Removes: "no fresh-dataset guard: grants at once on an empty or restored dataset",
		Scenarios: []string{"redis-restart-empty-churn"}, CaughtBy: []string{singleHolder, singlePoller, stalePoll}},
	// The restart erases the counters: every grant after it must still carry a token above those
	// granted before.
	{Name: TokenReset, Of: Lease, Removes: "fencing tokens restart from 1 when the counter is gone",
		Scenarios: []string{"redis-restart-empty"}, CaughtBy: []string{fencing}},
	// Requests keep landing while replies are lost for longer than the failover bound: a holder that
	// goes on writing blind keeps its leases alive in Redis although it polls nothing.
	{Name: NoLinkHealth, Of: Lease, Removes: "blind writes go on while no replies come back",
		Scenarios: []string{"one-way-partition"}, CaughtBy: []string{failover, liveness, blindWrite}},
	// Endpoints change hands at ten joins (and sixteen of twenty as eight instances join at once), many
	// with a poll in flight.
	{Name: ReleaseBeforePoll, Of: Lease, Removes: "a handoff releases without waiting for the in-flight poll",
		Scenarios: []string{"join-2-to-3-x10", "scale-to-10"}, CaughtBy: []string{singlePoller, singleHolder}},
	{Name: PlainRendezvous, Of: Lease, Removes: "rendezvous hashing without the load cap",
		Scenarios: []string{"balance-4x40-join"}, CaughtBy: []string{balance}},

	// The manager's lifecycle: Start and Stop as they were before their transitions were guarded.
	//
	// Stopped the way services stop on SIGTERM (the start context cancelled, then Stop), the mutant
	// releases nothing: its endpoints move a lease TTL later, not within the handoff bound.
	{Name: StopAfterCancelAbandons, Of: Lease, Removes: "Stop after Start's context ended releases nothing",
		Scenarios: []string{"signal-stop"}, CaughtBy: []string{failover}},
	// The mutant's heartbeat loop runs on while Stop releases (held on the wire longer than a
	// heartbeat interval): the heartbeat comes back, the fleet leaves the stopped instance its
	// endpoints, and they wait for the heartbeat to expire.
	{Name: StopHeartbeatRewrite, Of: Lease, Removes: "the heartbeat loop may write after Stop deleted the heartbeat",
		Scenarios: []string{"stop-heartbeat-race"}, CaughtBy: []string{failover, liveness}},
	// Stopped while its start retries, the mutant takes the running path and panics on what Start has
	// not set up yet. The harness turns the panic into the fault's error: the run did not go as
	// scheduled, and the verdict is unknown.
	{Name: StopDuringStartUnguarded, Of: Lease, Removes: "Stop during Start takes the running path (and panics)",
		Scenarios: []string{"stop-during-start"}, CaughtBy: []string{assumptions}, Mention: "Stop panicked"},
	// The elector stopped the same way releases nothing either: a standby leads a TTL later.
	{Name: ElectionStopAfterCancelAbandons, Of: Election, Removes: "the elector's Stop after Start's context ended releases nothing",
		Scenarios: []string{"election-signal-stop-redis"}, CaughtBy: []string{failover}},

	// Found by the composing nemesis. An acquire held on the wire past its call bound lands after its
	// sender gave up (or a renewal lands after the release that followed its loss failed): the key
	// names a candidate that does not lead, and a new attempt of that candidate is refused like
	// everyone else's. The mutant leaves that term to expire, so the role has no leader for a TTL after
	// the write landed; the reference releases it when Leader names it, and contends again at once.
	// A snapshot taken 30 s before Redis is killed is loaded as it restarts, while the holder of ep-0
	// is stalled: every lease key of the snapshot has expired, the epoch key has not (it has no TTL),
	// and the holder believes until its local deadline, up to 28.7 s after its last renewal, the
	// instant before the stall. The guard is armed by the new server's run ID; the mutant takes the
	// restored epoch as this dataset's and grants the holder's endpoints to the others at their next
	// pass, inside the holder's belief.
	{Name: GuardAnyRun, Of: Lease, Removes: "the fresh-dataset guard ignores the server's run ID: a restored epoch key counts",
		Scenarios: []string{"redis-snapshot-holder-stalled"}, CaughtBy: []string{singleHolder, singlePoller}},
	// The same restore: the guard armed by the first acquire after it (at most half a second in) ends
	// a TTL later in the reference, 15 s later in the mutant, while the stalled holder believes for at
	// least 18.7 s after the restore.
	{Name: GuardHalfTTL, Of: Lease, Removes: "the fresh-dataset guard lasts half a TTL",
		Scenarios: []string{"redis-snapshot-holder-stalled"}, CaughtBy: []string{singleHolder, singlePoller}},
	// Polls of 4 s every 5 s, a holder stalled past its deadline: the reference's watchdog cancels the
	// poll in flight at the deadline, one safety margin inside the validity bound; the mutant's poll
	// runs on up to 4 s past it. (With polls of 1 s, the safety margin, the late end is hidden.)
	{Name: NoWatchdog, Of: Lease, Removes: "no watchdog: a belief ends at the poll loop's next check, a poll in flight runs on",
		Scenarios: []string{"stall-long-polls"}, CaughtBy: []string{validity, singlePoller}},
	// Replies are lost under a one-way partition: the mutant's probe gets no reply and counts as
	// answered, so it writes its heartbeat blind every probe interval (RenewInterval/2); the heartbeat
	// lands and keeps the instance in the fleet, which leaves it its endpoints while it renews none.
	{Name: ProbeUnansweredHeals, Of: Lease, Removes: "a link probe that got no reply counts as answered",
		Scenarios: []string{"one-way-partition"}, CaughtBy: []string{blindWrite, failover, liveness}},

	{Name: ElectionAbandonedTermKept, Of: Election, Removes: "a term of its own it does not lead (a lost acquire that landed) is left to expire",
		Scenarios: []string{"election-late-acquire-redis"}, CaughtBy: []string{failover, liveness}},
}

// beliefs are the invariants that catch a belief outliving its lease.
var beliefs = []string{singleHolder, singlePoller, validity}

// Lease mutants.
const (
	NoDeadline           Name = "no-deadline"
	RenewGetThenExpire   Name = "renew-get-then-expire"
	RenewUnconditional   Name = "renew-unconditional"
	ReleaseUnchecked     Name = "release-unchecked"
	NoGuard              Name = "no-guard"
	NotFailClosed        Name = "not-fail-closed"
	LostRenewalKept      Name = "lost-renewal-kept"
	TokenReset           Name = "token-reset"
	DriftIgnored         Name = "drift-ignored"
	DeadlineFromReply    Name = "deadline-from-reply"
	NoLinkHealth         Name = "no-link-health"
	ReleaseBeforePoll    Name = "release-before-poll"
	ProcessIdentity      Name = "process-identity"
	PlainRendezvous      Name = "plain-rendezvous"
	AcquireNotIdempotent Name = "acquire-not-idempotent"
	TimeoutAsSuccess     Name = "timeout-as-success"
	GuardAnyRun          Name = "guard-any-run"
	GuardHalfTTL         Name = "guard-half-ttl"
	NoWatchdog           Name = "no-watchdog"
	ProbeUnansweredHeals Name = "probe-unanswered-heals"

	StopAfterCancelAbandons  Name = "stop-after-cancel-abandons"
	StopHeartbeatRewrite     Name = "stop-heartbeat-rewrite"
	StopDuringStartUnguarded Name = "stop-during-start-unguarded"
)

// Election mutants.
const (
	ElectionTermUnchecked Name = "election-term-unchecked"
	ElectionNoCancel      Name = "election-no-cancel"

	ElectionStopAfterCancelAbandons Name = "election-stop-after-cancel-abandons"

	ElectionAbandonedTermKept Name = "election-abandoned-term-kept"
)
