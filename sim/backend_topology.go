package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// Topologies a scenario can ask for (Scenario.Topology).
const (
	// TopologySingle is one Redis node: every backend provides it.
	TopologySingle = ""
	// TopologySentinel is a primary, two replicas and three sentinels (--redis sentinel).
	TopologySentinel = "sentinel"
)

// TopologyBackend is a Backend of several nodes (see package deploy). Each instance gets its own
// link to every node, and a client built by the topology whose dialer maps each node's announced address
// to that instance's link for it; the instance's chaos.Link is all of those links at once, so an
// instance fault (partition, latency, one-way, stall) applies to every link of the instance.
type TopologyBackend interface {
	Backend
	// Topology is the running deployment.
	Topology() deploy.Topology
	// Kind is the topology's name (TopologySentinel).
	Kind() string
	// Admin is the harness's own client of the topology (sessions, start-up checks), past every proxy.
	Admin() redis.UniversalClient
	// Watch records the topology's own events (promotions) into rec until the returned stop is called.
	Watch(ctx context.Context, rec *history.Recorder) (stop func())
}

// sentinelBackend is a private Sentinel set. Its process controls (Kill, Start, Restart, Pause,
// Resume, as the single-node faults use them) act on whichever node is the primary when they are
// called; Sentinel-specific faults use the topology itself.
type sentinelBackend struct {
	t     *deploy.Sentinel
	admin *redis.Client

	mu     sync.Mutex
	target *redisserver.Server // the process the last Kill or Pause acted on
}

var _ TopologyBackend = (*sentinelBackend)(nil)

// peerProxies is where a topology creates its peer links: nil for a toxiproxy of its own, else
// Proxies under PeerPrefix, which the topology does not close (their owner does).
func (o BackendOptions) peerProxies() chaos.Proxies {
	if o.Proxies == nil {
		return nil
	}
	return borrowedProxies{p: o.Proxies, prefix: o.PeerPrefix}
}

// borrowedProxies creates links on proxies it does not own, under a name prefix; closing it is a no-op,
// since the owner closes the proxies (the links themselves are closed by whoever created them).
type borrowedProxies struct {
	p      chaos.Proxies
	prefix string
}

func (b borrowedProxies) NewLink(name, upstream string) (chaos.Link, error) {
	return b.p.NewLink(b.prefix+name, upstream)
}

func (borrowedProxies) Close() error { return nil }

func openSentinel(ctx context.Context, scale float64, seed int64, proxies chaos.Proxies) (Backend, error) {
	// TENURE_TOPOLOGY_LOGS names a directory that receives the nodes' logs when the run ends (one
	// sub-directory per run), to see what the sentinels decided.
	var logDir string
	if d := os.Getenv("TENURE_TOPOLOGY_LOGS"); d != "" {
		logDir = filepath.Join(d, fmt.Sprintf("sentinel-%d-%d", seed, time.Now().UnixNano()))
	}
	t, err := deploy.StartSentinel(ctx, deploy.SentinelOptions{TimeScale: scale, Seed: seed, LogDir: logDir, Proxies: proxies})
	if err != nil {
		if errors.Is(err, redisserver.ErrNoBinary) {
			return nil, fmt.Errorf("sim: --redis sentinel runs real redis-server processes: install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis): %w", err)
		}
		return nil, err
	}
	return &sentinelBackend{t: t, admin: t.Direct()}, nil
}

func (b *sentinelBackend) Topology() deploy.Topology    { return b.t }
func (b *sentinelBackend) Kind() string                 { return TopologySentinel }
func (b *sentinelBackend) Admin() redis.UniversalClient { return b.admin }

// Sentinel returns the Sentinel topology itself.
func (b *sentinelBackend) Sentinel() *deploy.Sentinel { return b.t }

// Addr is the current primary's own address (the harness's view; instances never dial it).
func (b *sentinelBackend) Addr() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	p, err := b.t.Primary(ctx)
	if err != nil {
		return b.t.DataNodes()[0].Listen
	}
	return p.Listen
}

func (b *sentinelBackend) Describe() string    { return b.t.Describe() }
func (b *sentinelBackend) Shared() bool        { return false }
func (b *sentinelBackend) Persistence() string { return redisserver.PersistNone }

func (b *sentinelBackend) primary() (*redisserver.Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := b.t.Primary(ctx)
	if err != nil {
		return nil, err
	}
	return b.t.Server(p.Name)
}

// Kill kills the current primary (SIGKILL): the sentinels promote a replica.
func (b *sentinelBackend) Kill() error {
	s, err := b.primary()
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.target = s
	b.mu.Unlock()
	return s.Kill()
}

// Start starts the node the last Kill ended, empty; the sentinels turn it into a replica.
func (b *sentinelBackend) Start() error {
	b.mu.Lock()
	s := b.target
	b.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Start()
}

// Restart kills the current primary and starts it again empty.
func (b *sentinelBackend) Restart() error {
	if err := b.Kill(); err != nil {
		return err
	}
	return b.Start()
}

// Pause freezes the current primary (SIGSTOP); Resume continues it.
func (b *sentinelBackend) Pause() error {
	s, err := b.primary()
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.target = s
	b.mu.Unlock()
	return s.Pause()
}

func (b *sentinelBackend) Resume() error {
	b.mu.Lock()
	s := b.target
	b.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Resume()
}

// Watch records every promotion as a note on the timeline (see PromotionNote).
func (b *sentinelBackend) Watch(ctx context.Context, rec *history.Recorder) func() {
	return b.t.WatchPromotions(ctx, func(p deploy.Promotion) {
		rec.Add(history.Event{Kind: history.KindNote, At: rec.Now(), Note: PromotionNote(p.From, p.To)})
	})
}

// PromotionNote is the note a promotion is recorded as: "promotion: redis-0 -> redis-1".
func PromotionNote(from, to string) string {
	return fmt.Sprintf("%s%s -> %s", history.NotePromotion, from, to)
}

func (b *sentinelBackend) Close() error {
	return errors.Join(b.admin.Close(), b.t.Close())
}

// topologyLinks gives an instance its own link to every node of t, named after the instance's slot,
// and returns them as one chaos.Link (a fault applies to all) with the client that uses them.
func topologyLinks(p chaos.Proxies, prefix string, t deploy.Topology, o deploy.ClientOptions) (chaos.Link, redis.UniversalClient, deploy.Dialer, error) {
	var links []chaos.Link
	local := map[string]string{}
	for _, n := range t.Nodes() {
		l, err := p.NewLink(prefix+"-"+n.Name, n.Listen)
		if err != nil {
			for _, l := range links {
				_ = l.Close()
			}
			return nil, nil, nil, err
		}
		links = append(links, l)
		local[n.Announced] = l.Addr()
	}
	dial := deploy.MapDialer(local, o.DialTimeout)
	return chaos.Fanout(links...), t.NewClient(o, dial), dial, nil
}

// BackendForScenario returns the backend spec a run of a scenario with topology need and schedule s
// opens (see BackendFor for the schedule's part). A scenario that needs a Sentinel set gets a private
// one when the user asked for private servers ("auto", "server", which is what CI passes) or for
// "sentinel"; any other spec is refused with what the scenario needs. A single-node scenario runs on
// whatever was asked, a Sentinel set included: its Redis faults then act on the current primary.
func BackendForScenario(spec, need string, s chaos.Schedule) (string, error) {
	switch need {
	case TopologySingle:
		return BackendFor(spec, s)
	case TopologySentinel:
		switch spec {
		case "", "auto", "server", TopologySentinel:
		default:
			return "", fmt.Errorf("sim: the scenario needs a Sentinel set (a primary, two replicas and three sentinels the harness starts), which --redis %s cannot provide; use --redis sentinel, or server or auto for private processes", spec)
		}
		if _, err := BackendFor(TopologySentinel, s); err != nil {
			return "", err
		}
		return TopologySentinel, nil
	case TopologyIndependent:
		switch spec {
		case "", "auto", "server", TopologyIndependent:
		default:
			return "", fmt.Errorf("sim: the run needs independent Redis nodes (three redis-servers the harness starts), which --redis %s cannot provide; use --redis independent, or server or auto for private processes", spec)
		}
		if _, err := BackendFor(TopologyIndependent, s); err != nil {
			return "", err
		}
		return TopologyIndependent, nil
	case TopologyCluster:
		switch spec {
		case "", "auto", "server", TopologyCluster:
		default:
			return "", fmt.Errorf("sim: the scenario needs a Redis Cluster (three primaries and three replicas the harness starts), which --redis %s cannot provide; use --redis cluster, or server or auto for private processes", spec)
		}
		if _, err := BackendFor(TopologyCluster, s); err != nil {
			return "", err
		}
		return TopologyCluster, nil
	}
	return "", fmt.Errorf("sim: unknown topology %q (valid: %q for one node, %q, %q, %q)", need, TopologySingle, TopologySentinel, TopologyIndependent, TopologyCluster)
}

// adminClient is the harness's own client of the backend, past every proxy.
func adminClient(b Backend) (c redis.UniversalClient, owned bool) {
	if tb, ok := b.(TopologyBackend); ok {
		return tb.Admin(), false
	}
	return redis.NewClient(&redis.Options{Addr: b.Addr(), MaxRetries: 3, ContextTimeoutEnabled: true}), true
}

// watchBackend records the backend's own events (a topology's promotions) until the returned stop.
func watchBackend(ctx context.Context, b Backend, rec *history.Recorder) (stop func()) {
	if tb, ok := b.(TopologyBackend); ok {
		return tb.Watch(ctx, rec)
	}
	return func() {}
}

var _ chaos.Replicated = (*sentinelBackend)(nil)

// Primary implements chaos.Replicated.
func (b *sentinelBackend) Primary(ctx context.Context) (string, error) {
	p, err := b.t.Primary(ctx)
	return p.Name, err
}

// DataNodes implements chaos.Replicated.
func (b *sentinelBackend) DataNodes() []string {
	var out []string
	for _, n := range b.t.DataNodes() {
		out = append(out, n.Name)
	}
	return out
}

// KillNode implements chaos.Replicated.
func (b *sentinelBackend) KillNode(name string) error {
	s, err := b.t.Server(name)
	if err != nil {
		return err
	}
	return s.Kill()
}

// PeerLink implements chaos.Replicated.
func (b *sentinelBackend) PeerLink(name string) (chaos.Link, error) { return b.t.PeerLink(name) }

// Failover implements chaos.Replicated.
func (b *sentinelBackend) Failover(ctx context.Context) error { return b.t.Failover(ctx) }
