package reference

import (
	"context"
	"math/rand"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/lease"
	"github.com/tenurelabs/tenure/sim"
)

func init() { sim.Register("reference", func() sim.System { return NewReference() }) }

// Reference is Tenure's lease.Manager as a system under test.
type Reference struct {
	name string
	wait int // lease.Config.WaitReplicas (reference-wait: wait.go)
	// vary, when set, changes each instance's configuration last (a mutant's: mutants.go).
	vary func(lease.Config) lease.Config
}

// NewReference returns the reference system.
func NewReference() Reference { return Reference{name: "reference"} }

// Name implements sim.System.
func (r Reference) Name() string { return r.name }

// Description implements sim.Describer.
func (r Reference) Description() string {
	if r.name != "reference" {
		return "Tenure's lease manager (package lease), variant " + r.name
	}
	return "Tenure's lease manager (package lease): one lease per endpoint over a fleet"
}

// NewInstance implements sim.System.
func (r Reference) NewInstance(c sim.InstanceConfig) (sim.Instance, error) {
	cfg := lease.DefaultConfig()
	cfg.InstanceID = c.ID
	cfg.KeyPrefix = c.KeyPrefix
	cfg.SessionPrefix = c.SessionPrefix
	cfg.LeaseTTL = c.Timing.LeaseTTL
	cfg.RenewInterval = c.Timing.RenewInterval
	cfg.HeartbeatInterval = c.Timing.HeartbeatInterval
	cfg.HeartbeatTTL = c.Timing.HeartbeatTTL
	cfg.DiscoveryInterval = c.Timing.DiscoveryInterval
	cfg.SessionResync = 30 * c.Timing.DiscoveryInterval // the default's ratio, at the run's time scale
	cfg.PollInterval = c.Timing.PollInterval
	cfg.OpTimeout = c.Timing.OpTimeout
	cfg.DriftBound = c.Timing.DriftBound
	cfg.SafetyMargin = c.Timing.LeaseTTL / 30
	cfg.Clock = c.Clock
	cfg.Rand = rand.New(rand.NewSource(c.Seed))
	cfg.Logger = c.Logger
	cfg.WaitReplicas = r.wait
	if _, ok := c.Client.(*redis.ClusterClient); ok {
		cfg.KeyLayout = lease.LayoutCluster // every script in one slot
	}
	poll := c.Poll
	cfg.Poll = func(ctx context.Context, p lease.Poll) error { return poll(ctx, p.Endpoint, p.Token) }
	if c.Observe != nil {
		observe := c.Observe
		// Acquisitions and renewals that move the deadline carry the local validity deadline (Until);
		// a renewal is a Held event for the same token with Reason "renewed", which extends the belief.
		cfg.Observe = func(e lease.Event) {
			held := e.Kind == lease.EventAcquired || e.Kind == lease.EventRenewed
			observe(e.Endpoint, history.Belief{Held: held, Token: e.Token, Reason: e.Reason, Until: e.Until})
		}
	}
	if r.vary != nil {
		cfg = r.vary(cfg)
	}
	m, err := lease.New(c.Client, cfg)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// leaseScripts classifies the reference's Lua scripts, in process as at the wire.
var leaseScripts = must(sim.NewScriptCatalogue(sim.ReferenceLeaseScripts()...))

func must(c *sim.ScriptCatalogue, err error) *sim.ScriptCatalogue {
	if err != nil {
		panic(err)
	}
	return c
}

// BookkeepingRead implements sim.BookkeepingReader: the reference's read-only scripts (its session change
// counter read) are reads of its own bookkeeping.
func (r Reference) BookkeepingRead(args []any) bool { return leaseScripts.BookkeepingRead(args) }

// Classify implements sim.OpClassifier for the reference's Lua scripts (see lease.Scripts for their
// conventions, sim.ReferenceLeaseScripts for what each answer means in the model).
func (r Reference) Classify(args []any, reply any, err error) (history.Op, bool) {
	return leaseScripts.Classify(args, reply, err)
}
