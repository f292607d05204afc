package reference_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

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
