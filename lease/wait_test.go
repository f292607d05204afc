package lease

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
)

func TestWaitReplicasConfig(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	cfg.WaitReplicas = -1
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "WaitReplicas")

	cfg.WaitReplicas = 1
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cl.Close()
	_, err = New(cl, cfg)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "ClusterClient")
}

// primaryWithReplica starts a primary and a replica that replicates through a proxy (the returned
// link), and waits until the replica is attached.
func primaryWithReplica(t *testing.T) (*redisserver.Server, chaos.Link) {
	t.Helper()
	p := redistest.Start(t)
	px := chaos.NewEmbedded(1)
	t.Cleanup(func() { _ = px.Close() })
	link, err := px.NewLink("replication", p.Addr())
	require.NoError(t, err)
	r, err := redisserver.Start(redisserver.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	c := newClient(t, r.Addr())
	host, port, _ := net.SplitHostPort(link.Addr())
	require.NoError(t, c.Do(context.Background(), "REPLICAOF", host, port).Err())
	pc := newClient(t, p.Addr())
	require.Eventually(t, func() bool {
		n, err := pc.Do(context.Background(), "WAIT", 1, 100).Int64()
		return err == nil && n == 1
	}, settle, 50*time.Millisecond, "the replica attaches")
	return p, link
}

// With WaitReplicas, a lease is believed only while its grant and renewals reach a replica: cut
// replication and every belief ends (within one renewal and the validity that is left), heal it and
// the endpoints are held again.
func TestWaitReplicasEndsBeliefsWithoutReplication(t *testing.T) {
	t.Parallel()
	p, link := primaryWithReplica(t)
	c := newClient(t, p.Addr())
	require.NoError(t, MarkEstablished(context.Background(), c, "poll:"))
	eps := endpoints(4)
	f := newFleet(t, p.Addr(), testConfig())
	f.cfg.Targets = StaticTargets(eps)
	f.cfg.WaitReplicas = 1
	m := f.start("w")
	require.Eventually(t, func() bool { return len(m.Held()) == len(eps) }, settle, 20*time.Millisecond)

	require.NoError(t, link.Partition())
	cut := time.Now()
	// The next renewal (RenewInterval) is not acknowledged and ends the beliefs at once; in any case
	// they end by their validity deadline.
	require.Eventually(t, func() bool { return len(m.Held()) == 0 }, f.cfg.Validity()+time.Second, 10*time.Millisecond,
		"beliefs end once renewals are no longer replicated")
	t.Logf("beliefs ended %s after replication was cut", time.Since(cut).Round(time.Millisecond))
	for _, e := range f.log.eventsFor("") {
		if e.Kind == EventLost || e.Kind == EventExpired {
			require.False(t, e.At.Before(cut), "a belief ended before the cut: %+v", e)
		}
	}

	require.NoError(t, link.Heal())
	require.NoError(t, link.Reset())
	require.Eventually(t, func() bool { return len(m.Held()) == len(eps) }, settle, 20*time.Millisecond, "held again once replicated")
}

func TestSettleWaitFailsUnacknowledgedWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wait := redis.NewIntCmd(ctx, "wait", 1, 5)
	wait.SetVal(0)
	for _, tc := range []struct {
		name string
		res  int64
		fail bool
	}{
		{"grant", 12345, true},
		{"renewal", 1, true},
		{"held by another: nothing written", 0, false},
		{"guard: nothing granted", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &scriptCall{wait: 1, res: tc.res}
			settleWait(sc, wait)
			require.Equal(t, tc.fail, errors.Is(sc.err, ErrNotReplicated), "%v", sc.err)
		})
	}
	sc := &scriptCall{wait: 1, res: 1}
	wait.SetVal(1)
	settleWait(sc, wait)
	require.NoError(t, sc.err)
}
