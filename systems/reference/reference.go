package reference

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/mutation"
	"github.com/tenurelabs/tenure/lease"
	"github.com/tenurelabs/tenure/sim"
)

func init() { sim.Register("reference", func() sim.System { return NewReference() }) }

// Reference is Tenure's lease.Manager as a system under test.
type Reference struct {
	name      string
	scripts   map[string]string // SHA1 -> "acquire" | "renew" | "release"
	mutations mutation.Set      // empty for the reference itself; one mechanism removed for a mutant
	wait      int               // lease.Config.WaitReplicas (reference-wait: wait.go)
}

// NewReference returns the reference system.
func NewReference() Reference { return Reference{name: "reference", scripts: lease.ScriptNames()} }

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
	cfg.Mutations = r.mutations
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
	m, err := lease.New(c.Client, cfg)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// BookkeepingRead implements sim.BookkeepingReader: the reference's read-only scripts (its session change
// counter read) are reads of its own bookkeeping.
func (r Reference) BookkeepingRead(args []any) bool {
	if len(args) < 2 {
		return false
	}
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "evalsha", "evalsha_ro":
		_, ok := readScripts[strings.ToLower(fmt.Sprint(args[1]))]
		return ok
	case "eval", "eval_ro":
		sum := sha1.Sum([]byte(fmt.Sprint(args[1])))
		_, ok := readScripts[hex.EncodeToString(sum[:])]
		return ok
	}
	return false
}

var readScripts = lease.ReadScripts()

// Classify implements sim.OpClassifier for the reference's Lua scripts (see lease.Scripts for their
// conventions).
func (r Reference) Classify(args []any, reply any, err error) (history.Op, bool) {
	if len(args) < 6 {
		return history.Op{}, false
	}
	name := strings.ToLower(fmt.Sprint(args[0]))
	var kind string
	switch name {
	case "evalsha":
		kind = r.scripts[strings.ToLower(fmt.Sprint(args[1]))]
	case "eval":
		sum := sha1.Sum([]byte(fmt.Sprint(args[1])))
		kind = r.scripts[hex.EncodeToString(sum[:])]
	}
	if kind == "" {
		return history.Op{}, false
	}
	nkeys, convErr := strconv.Atoi(fmt.Sprint(args[2]))
	if convErr != nil || len(args) < 3+nkeys+2 {
		return history.Op{}, false
	}
	key := fmt.Sprint(args[3])
	owner := fmt.Sprint(args[3+nkeys])
	ttlMS, _ := strconv.ParseInt(fmt.Sprint(args[3+nkeys+1]), 10, 64)
	op := history.Op{Key: key, Owner: owner}
	n, _ := reply.(int64)
	switch kind {
	case "acquire":
		op.Kind, op.TTL, op.OK = history.OpAcquire, time.Duration(ttlMS)*time.Millisecond, err == nil && n > 0
		if n == -1 {
			// Refused by the fresh-dataset guard, whatever the key holds: not a lease-model answer.
			op.Kind = history.OpOther
		}
	case "renew":
		op.Kind, op.TTL, op.OK = history.OpRenew, time.Duration(ttlMS)*time.Millisecond, err == nil && n == 1
	case "release":
		op.Kind, op.OK = history.OpRelease, err == nil && n == 1
	}
	return op, true
}
