package lease

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// The reference on Redis Cluster (real processes: three primaries, three replicas, every link through
// toxiproxy; package deploy). Cluster failover here is driven by cluster-node-timeout 500ms.

func startCluster(t *testing.T) (*deploy.Cluster, deploy.Proxies) {
	t.Helper()
	if _, ok := redisserver.Available(); !ok {
		if os.Getenv("TENURE_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server not found and TENURE_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server not found")
	}
	embedded := chaos.NewEmbedded(1)
	t.Cleanup(func() { _ = embedded.Close() })
	px := chaos.ForDeploy(embedded, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := deploy.StartCluster(ctx, deploy.ClusterOptions{Proxies: px, NodeTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, px
}

// clusterClient is a client of c through proxies of its own, named name.
func clusterClient(t *testing.T, c *deploy.Cluster, px deploy.Proxies, name string) *redis.ClusterClient {
	t.Helper()
	links, err := c.NewClientLinks(px, name)
	require.NoError(t, err)
	t.Cleanup(links.Close)
	cl := c.Client(links, &redis.ClusterOptions{ContextTimeoutEnabled: true, MaxRetries: 3, MaxRedirects: 8})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// primaryOf returns the primary serving key's slot.
func primaryOf(t *testing.T, ctx context.Context, c *deploy.Cluster, key string) *deploy.ClusterNode {
	t.Helper()
	slot, err := c.Slot(ctx, key)
	require.NoError(t, err)
	p, err := c.PrimaryOf(ctx, slot)
	require.NoError(t, err)
	return p
}

// replicated waits until the replica of the primary serving key's slot has every write made there
// so far (WAIT on a write of its own, in the same slot: replication keeps order).
func replicated(t *testing.T, ctx context.Context, c *deploy.Cluster, key string) {
	t.Helper()
	conn := primaryOf(t, ctx, c, key).Control().Conn()
	defer conn.Close()
	require.NoError(t, conn.Set(ctx, key+":sync", "1", time.Minute).Err())
	require.Equal(t, int64(1), conn.Do(ctx, "WAIT", 1, 5000).Val(), "the replica acknowledges")
}

// promotionGrant runs the scenario the promotion guard exists for, with acquire as the acquire
// script: A is granted endpoint e by the primary of e's shard while the shard's replication link is
// cut, so the grant never reaches the replica; the primary is killed and its replica promoted; B then
// asks for e while A still believes in its lease. It returns B's answer and whether it came inside
// A's validity, and, once the guard is over, the token B is granted and A's.
func promotionGrant(t *testing.T, acquire *redis.Script) (res int64, inValidity bool, tokenA, tokenB int64) {
	c, px := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ttl = 8 * time.Second
	k := newKeys("poll:", LayoutCluster)
	ep := "e1"
	keys := []string{k.lease(ep), k.fence(ep), k.epoch(ep)}
	args := func(v string) []any {
		return []any{v, ttl.Milliseconds(), (24 * time.Hour).Milliseconds(), (24 * time.Hour).Milliseconds()}
	}
	a := clusterClient(t, c, px, "a")
	b := clusterClient(t, c, px, "b")

	// An established dataset: the epoch is on both nodes of the shard, the guard over.
	require.NoError(t, MarkEstablishedEndpoints(ctx, a, "poll:", []string{ep}))
	replicated(t, ctx, c, k.lease(ep))
	// Replication (the replica's link to its primary's announced address) is cut from here on.
	require.NoError(t, primaryOf(t, ctx, c, k.lease(ep)).Link.Partition())

	sent := time.Now()
	tokenA, err := acquire.Run(ctx, a, keys, args("a:1")...).Int64()
	require.NoError(t, err)
	require.Positive(t, tokenA, "A is granted e")

	_, promoted, err := c.KillPrimary(ctx, k.lease(ep))
	require.NoError(t, err)
	t.Logf("promoted %s %s after A's grant", promoted.Announced(), time.Since(sent).Round(time.Millisecond))

	// B's client learns the new primary within its state reload; errors until then are retried.
	require.Eventually(t, func() bool {
		res, err = acquire.Run(ctx, b, keys, args("b:1")...).Int64()
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	// A believes until sent + TTL·(1-drift) - margin (DefaultConfig's drift and margin).
	d := DefaultConfig()
	inValidity = time.Since(sent) < validity(ttl, d.DriftBound, d.SafetyMargin)
	if res > 0 {
		return res, inValidity, tokenA, res
	}
	// Once the guard is over, B is granted e with a token above A's.
	require.Eventually(t, func() bool {
		tokenB, err = acquire.Run(ctx, b, keys, args("b:2")...).Int64()
		return err == nil && tokenB > 0
	}, 2*ttl, 50*time.Millisecond)
	return res, inValidity, tokenA, tokenB
}

// A promoted replica that missed the latest grant must not grant the lease to anyone while the
// lost grant's holder may still believe in it; fencing goes on above the lost token.
func TestClusterPromotionArmsGuard(t *testing.T) {
	t.Parallel()
	res, inValidity, tokenA, tokenB := promotionGrant(t, acquireScript)
	require.True(t, inValidity, "the test asked inside A's validity (raise ttl on a slower machine)")
	require.Equal(t, int64(-1), res, "the promoted replica refuses every grant for one TTL")
	require.Greater(t, tokenB, tokenA, "fencing tokens keep increasing across the promotion")
}

// The guard without its run_id check (it then sees only a missing epoch key) is the mutant
// TestClusterPromotionArmsGuard exists to catch: the promoted replica has the epoch key, replicated
// long before, so the mutant grants e to B while A still holds it.
func TestClusterPromotionGuardMutantGrantsTwice(t *testing.T) {
	t.Parallel()
	src := strings.Replace(acquireSource, "if not guardEnd or guardRun ~= run then", "if not guardEnd then", 1)
	require.NotEqual(t, acquireSource, src, "the mutation applies")
	res, inValidity, _, _ := promotionGrant(t, redis.NewScript(src))
	require.True(t, inValidity)
	require.Positive(t, res, "without the run_id check B is granted a lease A still holds")
}

// clusterFleet runs managers on the cluster, each with its own client and proxies, over static
// endpoints, in the cluster layout.
type clusterFleet struct {
	t   *testing.T
	c   *deploy.Cluster
	px  deploy.Proxies
	cfg Config
	log *pollLog
	// reload is the instances' clients' ClusterStateReloadInterval (zero: the harness's 250 ms).
	reload time.Duration

	mu    sync.Mutex
	ms    map[string]*Manager
	links map[string]*deploy.ClientLinks
	eps   []string
}

func newClusterFleet(t *testing.T, c *deploy.Cluster, px deploy.Proxies, eps []string) *clusterFleet {
	cfg := testConfig()
	cfg.KeyLayout = LayoutCluster
	cfg.Targets = StaticTargets(eps)
	f := &clusterFleet{t: t, c: c, px: px, cfg: cfg, log: newPollLog(20 * time.Millisecond), ms: map[string]*Manager{}, links: map[string]*deploy.ClientLinks{}, eps: eps}
	t.Cleanup(func() {
		if o := f.log.overlaps(); len(o) > 0 {
			t.Errorf("overlapping polls by different instances:\n%v", o)
		}
	})
	return f
}

func (f *clusterFleet) start(id string) *Manager {
	f.t.Helper()
	cfg := f.cfg
	cfg.InstanceID = id
	cfg.Logger = quietLogger()
	cfg.Poll = f.log.pollFunc(id)
	cfg.Observe = f.log.observe
	links, err := f.c.NewClientLinks(f.px, id)
	require.NoError(f.t, err)
	f.t.Cleanup(links.Close)
	cl := f.c.Client(links, &redis.ClusterOptions{ContextTimeoutEnabled: true, MaxRetries: 3, MaxRedirects: 8,
		ClusterStateReloadInterval: f.reload})
	f.t.Cleanup(func() { _ = cl.Close() })
	m, err := New(cl, cfg)
	require.NoError(f.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(f.t, m.Start(ctx))
	f.t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = m.Stop(sctx)
		cancel()
	})
	f.mu.Lock()
	f.ms[id] = m
	f.links[id] = links
	f.mu.Unlock()
	return m
}

// holders maps each endpoint to the instances that say they hold it.
func (f *clusterFleet) holders() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for id, m := range f.ms {
		for _, ep := range m.Held() {
			out[ep] = append(out[ep], id)
		}
	}
	return out
}

// allHeldOnce reports whether every endpoint has exactly one holder.
func (f *clusterFleet) allHeldOnce() bool {
	h := f.holders()
	for _, ep := range f.eps {
		if len(h[ep]) != 1 {
			return false
		}
	}
	return true
}

// tokensIncrease checks that each endpoint's polls, in start order, never carry a smaller token.
func (f *clusterFleet) tokensIncrease() {
	f.t.Helper()
	for _, ep := range f.eps {
		ps := f.log.pollsOf(ep)
		slices.SortFunc(ps, func(a, b pollRecord) int { return a.start.Compare(b.start) })
		for i := 1; i < len(ps); i++ {
			require.GreaterOrEqual(f.t, ps[i].token, ps[i-1].token, "%s: poll by %s after one by %s", ep, ps[i].instance, ps[i-1].instance)
		}
	}
}

func TestClusterFleetSurvivesPrimaryKill(t *testing.T) {
	t.Parallel()
	c, px := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eps := endpoints(9)
	f := newClusterFleet(t, c, px, eps)
	admin := clusterClient(t, c, px, "admin")
	require.NoError(t, MarkEstablishedEndpoints(ctx, admin, f.cfg.KeyPrefix, eps))
	for _, id := range []string{"a", "b", "c"} {
		f.start(id)
	}
	require.Eventually(t, f.allHeldOnce, settle, 20*time.Millisecond, "every endpoint acquired once")
	k := newKeys(f.cfg.KeyPrefix, LayoutCluster)
	// Renewed: every endpoint has renewals by now or shortly.
	require.Eventually(t, func() bool {
		for _, ep := range eps {
			if len(f.log.renewalsFor(ep)) == 0 {
				return false
			}
		}
		return true
	}, settle, 20*time.Millisecond, "every endpoint renewed")

	// Kill the primary of eps[0]'s shard without waiting for replication: the promoted replica may
	// lack the latest writes, and its guard holds back grants of that shard's endpoints for one TTL.
	killedAt := time.Now()
	_, _, err := c.KillPrimary(ctx, k.lease(eps[0]))
	require.NoError(t, err)
	t.Logf("failover took %s", time.Since(killedAt).Round(time.Millisecond))
	// Single holder throughout (checked by overlaps at cleanup, and by beliefs while we wait), and
	// every endpoint held again.
	deadline := time.Now().Add(settle + f.cfg.LeaseTTL)
	for !f.allHeldOnce() {
		for ep, hs := range f.holders() {
			require.LessOrEqual(t, len(hs), 1, "%s believed held by %v", ep, hs)
		}
		require.True(t, time.Now().Before(deadline), "every endpoint held again after the promotion")
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("every endpoint held again %s after the kill", time.Since(killedAt).Round(time.Millisecond))
	f.tokensIncrease()
}

func TestClusterRenewalsGoOnWhileSlotMigrates(t *testing.T) {
	t.Parallel()
	c, px := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eps := endpoints(6)
	f := newClusterFleet(t, c, px, eps)
	admin := clusterClient(t, c, px, "admin")
	require.NoError(t, MarkEstablishedEndpoints(ctx, admin, f.cfg.KeyPrefix, eps))
	f.start("a")
	f.start("b")
	require.Eventually(t, f.allHeldOnce, settle, 20*time.Millisecond, "every endpoint acquired once")

	k := newKeys(f.cfg.KeyPrefix, LayoutCluster)
	ep := eps[0]
	holder := f.holders()[ep][0]
	slot, err := c.Slot(ctx, k.lease(ep))
	require.NoError(t, err)
	from := primaryOf(t, ctx, c, k.lease(ep))
	var to *deploy.ClusterNode
	for _, s := range []int{0, 6000, 12000} {
		if n, err := c.PrimaryOf(ctx, s); err == nil && n != from {
			to = n
			break
		}
	}
	require.NotNil(t, to)
	before := len(f.log.renewalsFor(ep))
	// One key per MIGRATE, a renewal interval apart: renewals meet the slot half moved (ASK).
	require.NoError(t, c.MigrateSlot(ctx, slot, to, 1, f.cfg.RenewInterval))
	after := primaryOf(t, ctx, c, k.lease(ep))
	require.Equal(t, to, after, "the slot moved")
	// Renewals went on across the move and after it, by the same holder, without a loss.
	require.Eventually(t, func() bool { return len(f.log.renewalsFor(ep)) >= before+3 }, settle, 20*time.Millisecond)
	require.Equal(t, []string{holder}, f.holders()[ep], "the holder kept the lease")
	for _, e := range f.log.eventsFor(ep) {
		require.NotEqual(t, EventLost, e.Kind, "%s lost during the migration: %+v", ep, e)
		require.NotEqual(t, EventExpired, e.Kind, "%s expired during the migration: %+v", ep, e)
	}
}

// In the cluster layout a fresh dataset guards each endpoint on its own: nothing is granted for one
// LeaseTTL from the first attempt, then every endpoint is acquired (at the guard's end, read from the
// endpoints' epoch keys, not only at the next periodic pass). One primary serves the layout too.
func TestClusterLayoutFreshDatasetGuardsEachEndpoint(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	eps := endpoints(5)
	cfg := testConfig()
	cfg.KeyLayout = LayoutCluster
	cfg.Targets = StaticTargets(eps)
	f := newFleet(t, srv.Addr(), cfg)
	started := time.Now()
	m := f.start("a")
	require.Eventually(t, func() bool { return len(m.Held()) == len(eps) }, cfg.LeaseTTL+cfg.RenewInterval+settle, 10*time.Millisecond)
	took := time.Since(started)
	t.Logf("every endpoint held %s after start (LeaseTTL %s)", took.Round(time.Millisecond), cfg.LeaseTTL)
	for _, ep := range eps {
		ev := f.log.eventsFor(ep)
		require.NotEmpty(t, ev)
		require.GreaterOrEqual(t, ev[0].At.Sub(started), cfg.LeaseTTL, "%s granted inside its guard", ep)
	}
	c := newClient(t, srv.Addr())
	k := newKeys(cfg.KeyPrefix, LayoutCluster)
	for _, ep := range eps {
		require.Equal(t, int64(3), c.Exists(context.Background(), k.lease(ep), k.fence(ep), k.epoch(ep)).Val(),
			"%s: lease, fence and epoch keys in the cluster layout", ep)
	}
}

// A shard whose primary is killed must not cost the other shards' endpoints anything: their holders
// keep renewing them (no loss, no local expiry, no change of holder) while the killed primary's
// endpoints wait for the promotion. Each shard's renewals go in a pipeline of their own and the
// killed primary alone is marked down (runGroups, link.go); one pipeline across the shards failed
// every renewal with the dead node's timeout, and the instance's link as a whole was marked unhealthy.
func TestClusterPrimaryKillSparesOtherShards(t *testing.T) {
	t.Parallel()
	c, px := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eps := endpoints(9)
	f := newClusterFleet(t, c, px, eps)
	admin := clusterClient(t, c, px, "admin")
	require.NoError(t, MarkEstablishedEndpoints(ctx, admin, f.cfg.KeyPrefix, eps))
	for _, id := range []string{"a", "b", "c"} {
		f.start(id)
	}
	require.Eventually(t, f.allHeldOnce, settle, 20*time.Millisecond, "every endpoint acquired once")
	require.Eventually(t, func() bool {
		for _, ep := range eps {
			if len(f.log.renewalsFor(ep)) == 0 {
				return false
			}
		}
		return true
	}, settle, 20*time.Millisecond, "every endpoint renewed")

	k := newKeys(f.cfg.KeyPrefix, LayoutCluster)
	doomed := primaryOf(t, ctx, c, k.lease(eps[0]))
	var spared []string
	for _, ep := range eps {
		if primaryOf(t, ctx, c, k.lease(ep)) != doomed {
			spared = append(spared, ep)
		}
	}
	require.NotEmpty(t, spared, "some endpoints live on the other shards")
	before := f.holders()
	renewed := map[string]int{}
	for _, ep := range spared {
		renewed[ep] = len(f.log.renewalsFor(ep))
	}

	killedAt := time.Now()
	_, _, err := c.KillPrimary(ctx, k.lease(eps[0]))
	require.NoError(t, err)
	t.Logf("failover took %s", time.Since(killedAt).Round(time.Millisecond))
	require.Eventually(t, f.allHeldOnce, settle+f.cfg.LeaseTTL, 10*time.Millisecond, "every endpoint held again after the promotion")
	// Two more renewals of each spared endpoint since the kill: the window covers the promotion and
	// the renewal passes after it.
	require.Eventually(t, func() bool {
		for _, ep := range spared {
			if len(f.log.renewalsFor(ep)) < renewed[ep]+2 {
				return false
			}
		}
		return true
	}, settle+2*f.cfg.RenewInterval, 20*time.Millisecond, "the spared endpoints are renewed")

	after := f.holders()
	for _, ep := range spared {
		require.Equal(t, before[ep], after[ep], "%s (spared shard) kept its holder", ep)
		for _, e := range f.log.eventsFor(ep) {
			if e.At.Before(killedAt) {
				continue
			}
			require.NotEqual(t, EventLost, e.Kind, "%s (spared shard) lost after the kill: %+v", ep, e)
			require.NotEqual(t, EventExpired, e.Kind, "%s (spared shard) expired after the kill: %+v", ep, e)
		}
	}
	f.tokensIncrease()
}

// Per-primary link health keeps the single layout's promise under a one-way partition: an instance
// whose replies are all lost (its requests still land) stops writing to each primary after its first
// unanswered call there, its heartbeat included, so its heartbeat expires and the others take its
// endpoints over. Blind heartbeats would keep it alive in the others' eyes, and its endpoints assigned
// to it, unpolled, for as long as the partition lasted.
func TestClusterOneWayPartitionHandsOver(t *testing.T) {
	t.Parallel()
	c, px := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eps := endpoints(6)
	f := newClusterFleet(t, c, px, eps)
	admin := clusterClient(t, c, px, "admin")
	require.NoError(t, MarkEstablishedEndpoints(ctx, admin, f.cfg.KeyPrefix, eps))
	a := f.start("a")
	f.start("b")
	require.Eventually(t, func() bool { return f.allHeldOnce() && len(a.Held()) > 0 }, settle, 20*time.Millisecond,
		"every endpoint acquired once, some by a")

	cut := time.Now()
	for _, l := range f.links["a"].Links {
		require.NoError(t, l.(chaos.Link).DropReplies())
	}
	// a's heartbeat is written at most HeartbeatInterval + OpTimeout after the cut, and expires
	// HeartbeatTTL later; a's leases expire in Redis within LeaseTTL of its last write.
	bound := f.cfg.HeartbeatInterval + f.cfg.OpTimeout + max(f.cfg.HeartbeatTTL, f.cfg.LeaseTTL) + f.cfg.LeaseTTL + settle
	require.Eventually(t, func() bool {
		h := f.holders()
		for _, ep := range eps {
			if !slices.Equal(h[ep], []string{"b"}) {
				return false
			}
		}
		return true
	}, bound, 20*time.Millisecond, "b holds every endpoint while a's replies are lost")
	t.Logf("b held every endpoint %s after the cut", time.Since(cut).Round(time.Millisecond))
}

// Stop's steps are bounded one by one: when the primary that keeps the instance's heartbeat does not
// answer, the heartbeat delete uses up its OpTimeout, and the releases that follow, bound for other,
// healthy primaries, still go out. With one bound for the three steps they went out with an expired
// context, and every lease the instance held stayed in Redis until it expired, refusing its next owner.
func TestClusterStopReleasesWhenTheHeartbeatPrimaryIsCut(t *testing.T) {
	t.Parallel()
	c, px := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eps := endpoints(12)
	f := newClusterFleet(t, c, px, eps)
	admin := clusterClient(t, c, px, "admin")
	require.NoError(t, MarkEstablishedEndpoints(ctx, admin, f.cfg.KeyPrefix, eps))
	k := newKeys(f.cfg.KeyPrefix, LayoutCluster)
	a := f.start("a")
	f.start("b")
	hb := primaryOf(t, ctx, c, k.node("a"))
	var mine []string // a's endpoints on the other shards
	values := map[string]string{}
	require.Eventually(t, func() bool {
		if !f.allHeldOnce() {
			return false
		}
		mine = mine[:0]
		clear(values)
		for _, ep := range a.Held() {
			if primaryOf(t, ctx, c, k.lease(ep)) != hb {
				mine = append(mine, ep)
				// Read with the holdings: on a loaded machine one may move between two looks.
				v, err := admin.Get(ctx, k.lease(ep)).Result()
				if err != nil || !strings.HasPrefix(v, "a:") {
					return false // moved between the two looks (or moving): look again
				}
				values[ep] = v
			}
		}
		return len(mine) > 0
	}, settle, 20*time.Millisecond, "every endpoint held once, some by a on a shard other than its heartbeat's")

	require.NoError(t, f.links["a"].Links[hb.Link.Addr()].Partition())
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	defer scancel()
	_ = a.Stop(sctx) // the heartbeat delete fails: that is the fault
	for _, ep := range mine {
		v, err := admin.Get(ctx, k.lease(ep)).Result()
		if err == redis.Nil {
			continue
		}
		require.NoError(t, err)
		require.NotEqual(t, values[ep], v, "%s: a's lease is still in Redis after its Stop returned", ep)
	}
}

// The probe of a primary marked down finds the replica promoted in its place by itself. The cluster
// client reloads its slot map only after a command routed through it fails, or every few seconds, and
// the probe's PING of the node goes around it: here the instance's other keys (its heartbeat, the
// registry) live on other shards, so nothing else fails on the dead one, and the client is left with
// go-redis's default reload interval (a minute): without a reload asked by the probe, the endpoint's
// shard stayed down until some other command failed or the minute was up. (With the harness's 250 ms
// reload interval, a campaign saw it found 1.4 s after the promotion, past a renewal interval and a
// call bound: the probe read the old map, waited out its PING, and looked again a probe interval later.)
func TestClusterProbeFindsThePromotedReplica(t *testing.T) {
	t.Parallel()
	c, px := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := testConfig()
	k := newKeys(cfg.KeyPrefix, LayoutCluster)
	elsewhere := map[*deploy.ClusterNode]bool{primaryOf(t, ctx, c, k.node("a")): true, primaryOf(t, ctx, c, k.nodes()): true}
	var eps []string
	for _, ep := range endpoints(64) {
		if !elsewhere[primaryOf(t, ctx, c, k.lease(ep))] {
			eps = append(eps, ep)
		}
		if len(eps) == 3 {
			break
		}
	}
	require.Len(t, eps, 3, "endpoints on a shard of their own")
	f := newClusterFleet(t, c, px, eps)
	f.reload = time.Minute // go-redis's default: the client would not reload by itself for a minute
	admin := clusterClient(t, c, px, "admin")
	require.NoError(t, MarkEstablishedEndpoints(ctx, admin, f.cfg.KeyPrefix, eps))
	m := f.start("a")
	require.Eventually(t, f.allHeldOnce, settle, 20*time.Millisecond, "every endpoint acquired once")
	down := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.downNodes)
	}

	// Watched from before the kill: KillPrimary returns once it has seen the promoted replica serve the
	// slot, and on a loaded machine the manager may have marked the node down and found the replica
	// before that.
	var sawDown atomic.Bool
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watch.Err() == nil {
			if down() > 0 {
				sawDown.Store(true)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, _, err := c.KillPrimary(ctx, k.lease(eps[0])) // returns once the promoted replica serves the slot
	require.NoError(t, err)
	promoted := time.Now()
	require.Eventually(t, sawDown.Load, 2*f.cfg.RenewInterval, 5*time.Millisecond,
		"a renewal sent to the killed primary marks it down")
	// Found within a probe interval (RenewInterval/2) and a probe's PING bound (OpTimeout), with as
	// much again for the machine.
	within := 2 * (f.cfg.RenewInterval/2 + f.cfg.OpTimeout)
	require.Eventually(t, func() bool { return down() == 0 }, within, 5*time.Millisecond,
		"the probe finds the promoted replica (within %s of the promotion)", within)
	t.Logf("the shard was up again %s after the promotion", time.Since(promoted).Round(time.Millisecond))
}
