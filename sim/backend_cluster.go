package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// TopologyCluster is a Redis Cluster of three primaries and three replicas (--redis cluster). The
// reference picks its cluster key layout on it (an endpoint's keys share the endpoint's hash slot).
const TopologyCluster = "cluster"

// clusterBackend is a private Redis Cluster. The single-node faults (Kill, Pause, Resume) act on the
// primary serving slot 0 when they are called; Start starts every killed node again, and it rejoins
// (backend_cluster_rejoin.go). The cluster faults (chaos.Sharded) act on the shard that serves an
// endpoint.
type clusterBackend struct {
	c       *deploy.Cluster
	proxies chaos.Proxies // the nodes' announced links
	admin   *redis.ClusterClient

	mu     sync.Mutex
	target *redisserver.Server // the process the last Kill or Pause acted on
	rec    *history.Recorder   // where promotions are noted (set by Watch)
	ctx    context.Context     // ends with Watch's stop
	wg     sync.WaitGroup      // promotion watchers
}

var (
	_ TopologyBackend  = (*clusterBackend)(nil)
	_ chaos.Sharded    = (*clusterBackend)(nil)
	_ chaos.ShardSlots = (*clusterBackend)(nil)
)

func openCluster(ctx context.Context, seed int64, peers chaos.Proxies) (Backend, error) {
	proxies := peers
	if proxies == nil {
		proxies = chaos.NewEmbedded(seed)
	}
	c, err := deploy.StartCluster(ctx, deploy.ClusterOptions{Proxies: proxies})
	if err != nil {
		_ = proxies.Close()
		if errors.Is(err, deploy.ErrNoBinary) || errors.Is(err, redisserver.ErrNoBinary) {
			return nil, fmt.Errorf("sim: --redis cluster runs real redis-server processes: install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis): %w", err)
		}
		return nil, err
	}
	// The harness's own client reaches every node on its own port, past every proxy.
	direct := map[string]string{}
	for _, n := range c.Nodes() {
		direct[n.Announced] = n.Listen
	}
	admin := c.Client(nil, &redis.ClusterOptions{Dialer: deploy.MapDialer(direct, 2*time.Second), MaxRetries: 3,
		MaxRedirects: 8, ContextTimeoutEnabled: true})
	return &clusterBackend{c: c, proxies: proxies, admin: admin, ctx: context.Background()}, nil
}

func (b *clusterBackend) Topology() deploy.Topology    { return b.c }
func (b *clusterBackend) Kind() string                 { return TopologyCluster }
func (b *clusterBackend) Admin() redis.UniversalClient { return b.admin }
func (b *clusterBackend) Describe() string             { return b.c.Describe() }
func (b *clusterBackend) Shared() bool                 { return false }
func (b *clusterBackend) Persistence() string          { return redisserver.PersistNone }
func (b *clusterBackend) Cluster() *deploy.Cluster     { return b.c }
func (b *clusterBackend) Addr() string                 { return b.c.Nodes()[0].Listen }

// slotPrimary is the live primary serving slot.
func (b *clusterBackend) slotPrimary(slot int) (*deploy.ClusterNode, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.c.PrimaryOf(ctx, slot)
}

// Kill kills (SIGKILL) the primary serving slot 0; its replica takes over.
func (b *clusterBackend) Kill() error {
	n, err := b.slotPrimary(0)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.target = n.Server
	b.mu.Unlock()
	b.notePromotion(n, 0)
	return n.Server.Kill()
}

// Start starts every killed node again from its nodes.conf, empty, and waits until each has rejoined:
// as a replica of the node promoted in its place, or, back before the cluster noticed, as the primary
// it was, whose replica then resynchronises from it (see deploy.Cluster.RestartNode).
func (b *clusterBackend) Start() error { return b.startKilled() }

// Restart kills the primary serving slot 0 and starts it again at once (Kill, then Start).
func (b *clusterBackend) Restart() error {
	if err := b.Kill(); err != nil {
		return err
	}
	return b.Start()
}

// Pause freezes (SIGSTOP) the primary serving slot 0; Resume continues it.
func (b *clusterBackend) Pause() error {
	n, err := b.slotPrimary(0)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.target = n.Server
	b.mu.Unlock()
	return n.Server.Pause()
}

func (b *clusterBackend) Resume() error {
	b.mu.Lock()
	s := b.target
	b.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Resume()
}

// Watch implements TopologyBackend: a primary killed by a fault is followed until another node serves
// its slot, and that promotion is noted on the timeline (PromotionNote).
func (b *clusterBackend) Watch(ctx context.Context, rec *history.Recorder) func() {
	ctx, cancel := context.WithCancel(ctx)
	b.mu.Lock()
	b.rec, b.ctx = rec, ctx
	b.mu.Unlock()
	return func() {
		cancel()
		b.wg.Wait()
	}
}

// notePromotion waits, in the background, for a node other than killed to serve slot, and notes it.
func (b *clusterBackend) notePromotion(killed *deploy.ClusterNode, slot int) {
	b.mu.Lock()
	rec, ctx := b.rec, b.ctx
	b.mu.Unlock()
	if rec == nil {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			if p, err := b.c.PrimaryOf(ctx, slot); err == nil && p != killed {
				rec.Add(history.Event{Kind: history.KindNote, At: rec.Now(), Note: PromotionNote(killed.Name, p.Name)})
				return
			}
			if !sleepCtx(ctx, 20*time.Millisecond) {
				return
			}
		}
	}()
}

// endpointSlot is the hash slot of the key the system under test keeps endpoint's lease in: the key of
// its newest recorded acquire or renewal of endpoint, so that a fault aimed at "the shard serving ep-0"
// hits that shard whatever the system names its keys. Before any such operation (or without a
// recorder) it is the slot of endpoint's hash tag, where the reference's cluster key layout keeps the
// endpoint's lease, fencing counter and epoch (lease.LayoutCluster).
func (b *clusterBackend) endpointSlot(ctx context.Context, endpoint string) (int, error) {
	b.mu.Lock()
	rec := b.rec
	b.mu.Unlock()
	key := "{" + endpoint + "}"
	if rec != nil {
		if k := leaseKeyOf(rec.Events(), endpoint); k != "" {
			key = k
		}
	}
	return b.c.Slot(ctx, key)
}

// leaseKeyOf is the key of the newest acquire or renewal of endpoint in events, or "" if there is none.
func leaseKeyOf(events []history.Event, endpoint string) string {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Op == nil || e.Endpoint != endpoint || e.Op.Key == "" {
			continue
		}
		if e.Op.Kind == history.OpAcquire || e.Op.Kind == history.OpRenew {
			return e.Op.Key
		}
	}
	return ""
}

// PrimarySlots implements chaos.ShardSlots: the slot ranges of the shard that serves endpoint, as a
// live node sees them now.
func (b *clusterBackend) PrimarySlots(ctx context.Context, endpoint string) (string, error) {
	slot, err := b.endpointSlot(ctx, endpoint)
	if err != nil {
		return "", err
	}
	for _, n := range b.c.Members() {
		if !n.Server.Running() {
			continue
		}
		shards, err := n.Control().ClusterShards(ctx).Result()
		if err != nil {
			continue
		}
		for _, sh := range shards {
			var ranges []string
			served := false
			for _, r := range sh.Slots {
				ranges = append(ranges, fmt.Sprintf("%d-%d", r.Start, r.End))
				served = served || (int(r.Start) <= slot && slot <= int(r.End))
			}
			if served {
				return strings.Join(ranges, ","), nil
			}
		}
	}
	return "", fmt.Errorf("no live node reports the shard serving slot %d (CLUSTER SHARDS)", slot)
}

// KillShardPrimary implements chaos.Sharded.
func (b *clusterBackend) KillShardPrimary(ctx context.Context, endpoint string) (node string, slot int, err error) {
	if slot, err = b.endpointSlot(ctx, endpoint); err != nil {
		return "", 0, err
	}
	n, err := b.c.PrimaryOf(ctx, slot)
	if err != nil {
		return "", slot, err
	}
	b.notePromotion(n, slot)
	return n.Name, slot, n.Server.Kill()
}

// MigrateEndpoint implements chaos.Sharded: the endpoint's slot moves to the first other primary in
// node order, one key per MIGRATE with pause between them, so clients meet the slot half moved.
func (b *clusterBackend) MigrateEndpoint(ctx context.Context, endpoint string, pause time.Duration) (from, to string, slot int, err error) {
	if slot, err = b.endpointSlot(ctx, endpoint); err != nil {
		return "", "", 0, err
	}
	src, err := b.c.PrimaryOf(ctx, slot)
	if err != nil {
		return "", "", slot, err
	}
	var dst *deploy.ClusterNode
	for _, n := range b.c.Members() {
		if n == src || !n.Server.Running() {
			continue
		}
		role, err := n.Control().Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			dst = n
			break
		}
	}
	if dst == nil {
		return src.Name, "", slot, fmt.Errorf("sim: no other live primary to move slot %d of %s to", slot, endpoint)
	}
	return src.Name, dst.Name, slot, b.c.MigrateSlot(ctx, slot, dst, 1, pause)
}

func (b *clusterBackend) Close() error {
	return errors.Join(b.admin.Close(), b.c.Close(), b.proxies.Close())
}
