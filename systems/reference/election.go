package reference

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/election"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func init() {
	sim.Register("election-redis", func() sim.System { return Election{Postgres: false} })
	sim.Register("election-postgres", func() sim.System { return Election{Postgres: true} })
}

// Election is Tenure's reference leader election as a system under test. Each poll target is a role;
// every instance contends for every role; while it leads a role it acts on the role's resource every
// poll interval, presenting its term as the fencing token. The checker then judges "never two leaders
// acting" exactly as it judges "never two pollers".
type Election struct {
	// Postgres selects the PostgreSQL backend (advisory locks) instead of Redis.
	Postgres bool

	// mutant names a checker-power mutant ("" for the reference), whose vary changes each elector's
	// configuration last (mutants.go).
	mutant string
	vary   func(election.Config) election.Config
}

// Name implements sim.System.
func (e Election) Name() string {
	if e.mutant != "" {
		return e.mutant
	}
	if e.Postgres {
		return "election-postgres"
	}
	return "election-redis"
}

// DeadPeerBound implements sim.DeadPeerBounder. On PostgreSQL a silent holder keeps its advisory lock
// until the server ends its session (election.PostgresDeadPeerBound), and a standby tries again every
// RetryInterval (the discovery interval here). On Redis it is zero: the leader key expires after a TTL.
func (e Election) DeadPeerBound(t sim.Timing) time.Duration {
	if !e.Postgres {
		return 0
	}
	return election.PostgresDeadPeerBound(t.LeaseTTL) + t.DiscoveryInterval
}

// Description implements sim.Describer.
func (e Election) Description() string {
	if e.mutant != "" {
		return "Tenure's leader election (package election), variant " + e.mutant
	}
	if e.Postgres {
		return "Tenure's leader election (package election) on PostgreSQL advisory locks"
	}
	return "Tenure's leader election (package election) on Redis"
}

// Classify implements sim.OpClassifier for the Redis backend's scripts (see
// sim.ReferenceElectionScripts), so the leader key is checked for linearizability like a lease key.
func (e Election) Classify(args []any, reply any, err error) (history.Op, bool) {
	if e.Postgres {
		return history.Op{}, false
	}
	return electionScripts.Classify(args, reply, err)
}

var electionScripts = must(sim.NewScriptCatalogue(sim.ReferenceElectionScripts()...))

// Kind tells the harness to record an election history.
func (Election) Kind() string { return "election" }

// UsesPostgres tells the harness to route the instance's link to PostgreSQL.
func (e Election) UsesPostgres() bool { return e.Postgres }

// NewInstance implements sim.System.
func (e Election) NewInstance(c sim.InstanceConfig) (sim.Instance, error) {
	if e.Postgres && c.Postgres == nil {
		return nil, errors.New("sim: election-postgres needs a PostgreSQL (see --postgres)")
	}
	return &electionInstance{sys: e, cfg: c}, nil
}

type electionInstance struct {
	sys Election
	cfg sim.InstanceConfig

	mu       sync.Mutex
	backend  election.Backend
	electors []*election.Elector
	beliefs  map[string]*roleBelief
}

// roleBelief is what the instance last reported about one role. Beliefs are reported in term order:
// a renewal's deadline arriving after its leadership ended is dropped, so a belief never outlives
// its leader context in the history.
type roleBelief struct {
	term  uint64 // the last leadership reported
	held  bool
	until time.Time
}

func (in *electionInstance) Start(ctx context.Context) error {
	c := in.cfg
	var b election.Backend
	if in.sys.Postgres {
		pb, err := newPostgresBackend(ctx, c)
		if err != nil {
			return err
		}
		b = pb
	} else {
		b = election.NewRedisBackend(c.Client, election.RedisOptions{KeyPrefix: c.KeyPrefix + "election:", Logger: c.Logger})
	}
	in.mu.Lock()
	in.beliefs = map[string]*roleBelief{}
	in.mu.Unlock()
	var electors []*election.Elector
	for _, role := range c.Targets {
		role := role
		cfg := election.DefaultConfig()
		cfg.Role = role
		cfg.InstanceID = c.ID
		cfg.TTL = c.Timing.LeaseTTL
		cfg.RenewInterval = c.Timing.RenewInterval
		cfg.RetryInterval = c.Timing.DiscoveryInterval
		cfg.StartJitter = c.Timing.RenewInterval / 2
		cfg.HandoffTimeout = 2 * c.Timing.PollDuration
		cfg.DriftBound = c.Timing.DriftBound
		cfg.SafetyMargin = c.Timing.LeaseTTL / 30
		cfg.OpTimeout = c.Timing.OpTimeout
		cfg.Clock = c.Clock
		cfg.Rand = rand.New(rand.NewPCG(uint64(c.Seed), uint64(len(electors))))
		// The leader acts every poll interval, jittered down by up to a tenth from the run's seed, so
		// that its actions do not keep the phase of its renewals or of another role's leader.
		var jmu sync.Mutex
		jrng := rand.New(rand.NewPCG(uint64(c.Seed)^0x5bd1e995, uint64(len(electors))))
		every := func() time.Duration {
			jmu.Lock()
			defer jmu.Unlock()
			return c.Timing.PollInterval - time.Duration(jrng.Int64N(int64(c.Timing.PollInterval/10)+1))
		}
		cfg.Logger = c.Logger
		cfg.OnValidUntil = func(term uint64, until time.Time) { in.valid(role, term, until) }
		cfg.OnStartedLeading = func(lctx context.Context, term uint64) {
			// The belief ends the moment the leader context is cancelled, not when the poll loop
			// notices: a graceful stop releases the role (letting a standby in) only after its
			// in-flight work, and the belief must not look longer than it was.
			stop := context.AfterFunc(lctx, func() { in.ended(role, term, "leader-context-cancelled") })
			defer stop()
			for lctx.Err() == nil {
				_ = c.Poll(lctx, role, term)
				t := c.Clock.NewTimer(every())
				select {
				case <-t.C():
				case <-lctx.Done():
					t.Stop()
				}
			}
		}
		cfg.OnStoppedLeading = func() { in.ended(role, 0, "stopped-leading") }
		if in.sys.vary != nil {
			cfg = in.sys.vary(cfg)
		}
		el, err := election.New(b, cfg)
		if err != nil {
			_ = b.Close()
			return err
		}
		electors = append(electors, el)
	}
	in.mu.Lock()
	in.backend, in.electors = b, electors
	in.mu.Unlock()
	for _, el := range electors {
		if err := el.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// newPostgresBackend connects, retrying while the server is slow to accept (many instances starting at
// once under load) until ctx ends. The elector's Start then rides out the same on its own calls.
func newPostgresBackend(ctx context.Context, c sim.InstanceConfig) (*election.PostgresBackend, error) {
	backoff := c.Timing.OpTimeout / 4
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x9e3779b9))
	for {
		actx, cancel := context.WithTimeout(ctx, 4*c.Timing.OpTimeout)
		pb, err := election.NewPostgresBackend(actx, c.Postgres.URL, election.PostgresOptions{Table: c.Postgres.Table})
		cancel()
		if err == nil || ctx.Err() != nil || errors.Is(err, election.ErrInvalidConfig) {
			return pb, err
		}
		if c.Logger != nil {
			c.Logger.Warn("election postgres not answering at start; retrying", "instance", c.ID, "err", err)
		}
		d := backoff/2 + time.Duration(rng.Int64N(int64(backoff/2)+1))
		t := c.Clock.NewTimer(d)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return nil, errors.Join(err, ctx.Err())
		}
		backoff = min(2*backoff, c.Timing.DiscoveryInterval)
	}
}

// valid reports an acquisition (a new term) or a renewal that moved the deadline of the current one.
func (in *electionInstance) valid(role string, term uint64, until time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	rb := in.beliefs[role]
	if rb == nil {
		rb = &roleBelief{}
		in.beliefs[role] = rb
	}
	switch {
	case term > rb.term:
		rb.term, rb.held, rb.until = term, true, until
		in.observe(role, history.Belief{Held: true, Token: term, Reason: history.ReasonAcquired, Until: until})
	case term == rb.term && rb.held && until.After(rb.until):
		rb.until = until
		in.observe(role, history.Belief{Held: true, Token: term, Reason: history.ReasonRenewed, Until: until})
	}
}

// ended reports the end of the belief in term (0: whichever is current).
func (in *electionInstance) ended(role string, term uint64, reason string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	rb := in.beliefs[role]
	if rb == nil || !rb.held || (term != 0 && term != rb.term) {
		return
	}
	rb.held = false
	in.observe(role, history.Belief{Held: false, Token: rb.term, Reason: reason})
}

// observe reports a belief; callers hold in.mu, so beliefs reach the recorder in the order decided.
func (in *electionInstance) observe(role string, b history.Belief) {
	if in.cfg.Observe != nil {
		in.cfg.Observe(role, b)
	}
}

func (in *electionInstance) Stop(ctx context.Context) error {
	in.mu.Lock()
	electors, b := in.electors, in.backend
	in.mu.Unlock()
	var errs []error
	for _, el := range electors {
		errs = append(errs, el.Stop(ctx))
	}
	if b != nil {
		errs = append(errs, b.Close())
	}
	return errors.Join(errs...)
}
