package chaos_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
)

// replicatedEnv is an Env whose backend is a fake replicated set: it records, in order, what the
// faults did to it.
type replicatedEnv struct {
	chaos.Env
	b *fakeReplicated
}

func (e replicatedEnv) Backend() chaos.Backend { return e.b }

type fakeReplicated struct {
	chaos.Backend
	calls []string
}

func (f *fakeReplicated) Primary(context.Context) (string, error) { return "redis-0", nil }
func (f *fakeReplicated) DataNodes() []string                     { return []string{"redis-0", "redis-1"} }
func (f *fakeReplicated) KillNode(name string) error {
	f.calls = append(f.calls, "kill-node "+name)
	return nil
}
func (f *fakeReplicated) PeerLink(name string) (chaos.Link, error) {
	return &fakeLink{name: name, f: f}, nil
}
func (f *fakeReplicated) Failover(context.Context) error { return nil }

type fakeLink struct {
	chaos.Link
	name string
	f    *fakeReplicated
}

func (l *fakeLink) Kill() error {
	l.f.calls = append(l.f.calls, "kill-link "+l.name)
	return nil
}

// A primary kill kills the primary's process; with DropInFlight it first kills the primary's peer link,
// so what the link holds for the replicas is lost with the host, and says so in its parameters.
func TestPrimaryKillDropInFlight(t *testing.T) {
	b := &fakeReplicated{}
	_, a, err := chaos.PrimaryKill{}.Apply(context.Background(), replicatedEnv{b: b})
	require.NoError(t, err)
	require.Equal(t, []string{"kill-node redis-0"}, b.calls)
	require.Equal(t, map[string]string{"node": "redis-0"}, a.Params)

	b = &fakeReplicated{}
	_, a, err = chaos.PrimaryKill{DropInFlight: true}.Apply(context.Background(), replicatedEnv{b: b})
	require.NoError(t, err)
	require.Equal(t, []string{"kill-link redis-0", "kill-node redis-0"}, b.calls)
	require.Equal(t, map[string]string{"node": "redis-0", "in_flight": "dropped"}, a.Params)
}
