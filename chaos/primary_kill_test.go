package chaos_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
)

// replicatedEnv is an Env whose backend is a fake Sentinel set: it records, in order, what the faults
// did to it.
type replicatedEnv struct {
	chaos.Env
	b *fakeReplicated
}

func (e replicatedEnv) Backend() chaos.Backend { return e.b }

type fakeReplicated struct {
	deploy.Deployment
	topology string
	calls    []string
}

func (f *fakeReplicated) About() deploy.About { return deploy.About{Topology: f.topology} }
func (f *fakeReplicated) Primary(context.Context, string) (deploy.Serving, error) {
	return deploy.Serving{Node: "redis-0"}, nil
}
func (f *fakeReplicated) Kill(_ context.Context, name string) error {
	f.calls = append(f.calls, "kill-node "+name)
	return nil
}
func (f *fakeReplicated) PeerLink(name string) (deploy.Link, error) {
	return &fakeLink{name: name, f: f}, nil
}
func (f *fakeReplicated) Promote(context.Context) error {
	f.calls = append(f.calls, "promote")
	return nil
}

type fakeLink struct {
	deploy.Link
	name string
	f    *fakeReplicated
}

func (l *fakeLink) Kill() error {
	l.f.calls = append(l.f.calls, "kill-link "+l.name)
	return nil
}

func (l *fakeLink) Partition() error {
	l.f.calls = append(l.f.calls, "partition-link "+l.name)
	return nil
}

func (l *fakeLink) Heal() error {
	l.f.calls = append(l.f.calls, "heal-link "+l.name)
	return nil
}

// A primary kill kills the primary's process; with DropInFlight it first kills the primary's peer link,
// so what the link holds for the replicas is lost with the host, and says so in its parameters.
func TestPrimaryKillDropInFlight(t *testing.T) {
	b := &fakeReplicated{topology: deploy.TopologySentinel}
	_, a, err := chaos.PrimaryKill{}.Apply(context.Background(), replicatedEnv{b: b})
	require.NoError(t, err)
	require.Equal(t, []string{"kill-node redis-0"}, b.calls)
	require.Equal(t, map[string]string{"node": "redis-0"}, a.Params)

	b = &fakeReplicated{topology: deploy.TopologySentinel}
	_, a, err = chaos.PrimaryKill{DropInFlight: true}.Apply(context.Background(), replicatedEnv{b: b})
	require.NoError(t, err)
	require.Equal(t, []string{"kill-link redis-0", "kill-node redis-0"}, b.calls)
	require.Equal(t, map[string]string{"node": "redis-0", "in_flight": "dropped"}, a.Params)
}

// The faults of a Sentinel set act on the primary the sentinels name, record it, and refuse any other
// deployment (a Redis Cluster included, whose own faults name a shard) before touching it.
func TestSentinelFaultsActOnThePrimary(t *testing.T) {
	b := &fakeReplicated{topology: deploy.TopologySentinel}
	end, a, err := chaos.PrimaryIsolate{}.Apply(context.Background(), replicatedEnv{b: b})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"node": "redis-0"}, a.Params)
	require.NoError(t, end(context.Background()))
	_, a, err = chaos.ManualFailover{}.Apply(context.Background(), replicatedEnv{b: b})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"node": "redis-0"}, a.Params)
	require.Equal(t, []string{"partition-link redis-0", "heal-link redis-0", "promote"}, b.calls)

	for _, topology := range []string{deploy.TopologySingle, deploy.TopologyCluster, deploy.TopologyIndependent} {
		b := &fakeReplicated{topology: topology}
		for _, f := range []chaos.Fault{chaos.PrimaryKill{}, chaos.PrimaryIsolate{}, chaos.ManualFailover{}, chaos.ReplicationLatency{}} {
			_, _, err := f.Apply(context.Background(), replicatedEnv{b: b})
			require.ErrorIs(t, err, chaos.ErrNotReplicated, "%s on %q", f.Name(), topology)
			require.ErrorContains(t, err, "--redis sentinel")
		}
		require.Empty(t, b.calls, topology)
	}
}
