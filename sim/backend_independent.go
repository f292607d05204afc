package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// TopologyIndependent is three independent Redis nodes (--redis independent): the deployment Redlock
// assumes. The first node also holds the run's poll targets.
const TopologyIndependent = "independent"

// TopologyUser is an optional capability of a System: the Redis deployment it needs, whatever the
// scenario (TopologyIndependent for Redlock). A scenario that needs one node runs on the system's
// topology; one that needs another topology is refused.
type TopologyUser interface {
	Topology() string
}

// TopologyNeed is the topology a run of system on a scenario that needs sc needs.
func TopologyNeed(system System, sc string) (string, error) {
	tu, ok := system.(TopologyUser)
	if !ok || tu.Topology() == TopologySingle || tu.Topology() == sc {
		return sc, nil
	}
	if sc != TopologySingle {
		return "", fmt.Errorf("sim: system %s runs on %s nodes and the scenario needs a %s topology", system.Name(), tu.Topology(), sc)
	}
	return tu.Topology(), nil
}

// independentBackend is a private set of independent nodes. The single-node faults (Kill, Start,
// Restart, Pause, Resume) act on the first node, which holds the poll targets and one vote of a
// majority: on a set without failover, one node restarting empty is the fault Redlock's analysis
// turns on.
type independentBackend struct {
	t     *deploy.Independent
	admin *redis.Client
}

var _ TopologyBackend = (*independentBackend)(nil)

func openIndependent(ctx context.Context, seed int64, proxies chaos.Proxies) (Backend, error) {
	t, err := deploy.StartIndependent(ctx, deploy.IndependentOptions{Seed: seed, Proxies: proxies})
	if err != nil {
		if errors.Is(err, redisserver.ErrNoBinary) {
			return nil, fmt.Errorf("sim: --redis independent runs real redis-server processes: install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis): %w", err)
		}
		return nil, err
	}
	return &independentBackend{t: t, admin: t.Direct()}, nil
}

func (b *independentBackend) Topology() deploy.Topology    { return b.t }
func (b *independentBackend) Kind() string                 { return TopologyIndependent }
func (b *independentBackend) Admin() redis.UniversalClient { return b.admin }
func (b *independentBackend) Addr() string                 { return b.t.Nodes()[0].Listen }
func (b *independentBackend) Describe() string             { return b.t.Describe() }
func (b *independentBackend) Shared() bool                 { return false }
func (b *independentBackend) Persistence() string          { return redisserver.PersistNone }

// Watch implements TopologyBackend: independent nodes have no events of their own.
func (b *independentBackend) Watch(context.Context, *history.Recorder) func() { return func() {} }

func (b *independentBackend) first() *redisserver.Server {
	s, _ := b.t.Server(b.t.Nodes()[0].Name)
	return s
}

func (b *independentBackend) Kill() error    { return b.first().Kill() }
func (b *independentBackend) Start() error   { return b.first().Start() }
func (b *independentBackend) Restart() error { return b.first().Restart() }
func (b *independentBackend) Pause() error   { return b.first().Pause() }
func (b *independentBackend) Resume() error  { return b.first().Resume() }

func (b *independentBackend) Close() error {
	return errors.Join(b.admin.Close(), b.t.Close())
}

// nodeClients builds the instance's clients of each data node, when the system asks for a topology
// (see InstanceConfig.Nodes); dial maps each node's announced address to the instance's link for it.
func (r *runner) nodeClients(in *vinstance, dial deploy.Dialer) []redis.UniversalClient {
	tb, ok := r.backend.(TopologyBackend)
	if _, asks := r.o.System.(TopologyUser); !ok || !asks || dial == nil {
		return nil
	}
	var out []redis.UniversalClient
	for _, n := range tb.Topology().Nodes() {
		if n.Sentinel {
			continue
		}
		c := deploy.NodeClient(n, deploy.ClientOptions{DialTimeout: r.timing.OpTimeout, ReadTimeout: r.timing.OpTimeout,
			WriteTimeout: r.timing.OpTimeout, PoolSize: 8, MaxRetries: 3}, dial)
		c.AddHook(&recordingHook{instance: in.id, node: n.Name, rec: r.rec, classifier: r.classifier, dead: in.dead.Load,
			hold: in.hold, defaults: defaultClassifier{leasePrefix: r.keyPrefix + "lease:"}})
		in.nodes = append(in.nodes, c)
		out = append(out, c)
	}
	return out
}

// closeClients closes every client of the instance.
func (in *vinstance) closeClients() {
	if in.client != nil {
		_ = in.client.Close()
	}
	for _, c := range in.nodes {
		_ = c.Close()
	}
}
