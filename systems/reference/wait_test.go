package reference_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/lease"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

// reference-wait is runnable by name and passes WaitReplicas to the manager: lease.New refuses it on a
// cluster client, which only a manager configured with WaitReplicas does.
func TestReferenceWaitIsWired(t *testing.T) {
	s, err := sim.Lookup(reference.WaitSystemName)
	require.NoError(t, err)
	require.Equal(t, reference.WaitSystemName, s.Name())
	require.NotContains(t, sim.Systems(), reference.WaitSystemName)

	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cl.Close()
	cfg := sim.InstanceConfig{ID: "i0", Client: cl, KeyPrefix: "poll:", SessionPrefix: "session:", Timing: sim.SpecTiming()}
	_, err = s.NewInstance(cfg)
	require.ErrorIs(t, err, lease.ErrInvalidConfig)
	require.ErrorContains(t, err, "WaitReplicas")

	// The reference itself builds on a cluster client (in the cluster layout).
	_, err = reference.NewReference().NewInstance(cfg)
	require.NoError(t, err)
}

// On a lone redis-server no replica ever acknowledges, so every grant reference-wait sends is answered
// but not confirmed by the WAIT after it: the history records each such grant NotReplicated (the
// instance never relied on it, and never believes it holds), and records the releases of those
// holdings, which the reference counts whatever WAIT says, as acknowledged. The plain reference's
// grants are acknowledged.
func TestReferenceWaitGrantsRecordedNotReplicated(t *testing.T) {
	redistest.Start(t)
	sc := sim.Scenario{Name: "wait-alone", Instances: 1, Endpoints: 2, Duration: 40 * time.Second}
	run := func(sys sim.System) (grants, notReplicated, releases int, beliefs int) {
		res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 0.1, Backend: "server"})
		require.NoError(t, err)
		for _, e := range res.History.Events {
			switch {
			case e.Kind == history.KindBelief && e.Belief.Held:
				beliefs++
			case e.Kind != history.KindOp || !e.Op.OK || e.Op.Unknown:
			case e.Op.Kind == history.OpAcquire:
				grants++
				if e.Op.NotReplicated {
					notReplicated++
				}
			case e.Op.Kind == history.OpRelease:
				releases++
				require.False(t, e.Op.NotReplicated, "a release is counted whatever WAIT says: seq %d", e.Seq)
			case e.Op.NotReplicated:
				t.Fatalf("seq %d: %s marked NotReplicated", e.Seq, e.Op.Kind)
			}
		}
		return grants, notReplicated, releases, beliefs
	}

	grants, notRepl, releases, beliefs := run(reference.NewReferenceWait(1))
	t.Logf("reference-wait alone: %d grants answered, %d of them not replicated, %d releases, %d beliefs", grants, notRepl, releases, beliefs)
	require.Positive(t, grants, "grants answered by the server")
	require.Equal(t, grants, notRepl, "every grant is unconfirmed on a server without replicas")
	require.Positive(t, releases, "the unconfirmed holdings are released before the next attempt")
	require.Zero(t, beliefs, "and never believed")

	grants, notRepl, _, beliefs = run(reference.NewReference())
	require.Positive(t, grants)
	require.Zero(t, notRepl)
	require.Positive(t, beliefs)
}
