package deploy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// IndependentOptions configure a set of independent Redis nodes: the deployment Redlock assumes, N
// primaries with no replication between them and nothing that fails one over to another.
type IndependentOptions struct {
	// Binary is the redis-server executable; default: redis-server from PATH.
	Binary string
	// Nodes is how many nodes to start; default 3.
	Nodes int
	// Proxies creates the peer proxies (required).
	Proxies Proxies
}

// Independent is a running set of independent Redis nodes. Each has a peer proxy like any node of a
// deployment of several, although independent nodes have no peers: it keeps the contract (every node
// is known by its announced address) so that instance links and faults work as they do elsewhere.
// "The primary" is the first node, which holds the data that is not spread over the nodes (the poll
// targets), so a fault aimed at the deployment's primary restarts or pauses one vote of a majority.
type Independent struct {
	nodeSet
	started started
	version string
	admin   *redis.Client

	closeOnce sync.Once
	closeErr  error
}

var _ Deployment = (*Independent)(nil)

func openIndependent(ctx context.Context, o Options) (Deployment, error) {
	t, err := StartIndependent(ctx, IndependentOptions{Proxies: o.Peers})
	if err != nil {
		if errors.Is(err, redisserver.ErrNoBinary) {
			return nil, fmt.Errorf("deploy: --redis independent runs real redis-server processes: install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis): %w", err)
		}
		return nil, err
	}
	return t, nil
}

// StartIndependent starts the nodes and returns once each answers PING.
func StartIndependent(ctx context.Context, o IndependentOptions) (_ *Independent, err error) {
	if o.Binary, err = binary(o.Binary); err != nil {
		return nil, err
	}
	if err := needProxies(o.Proxies, "independent nodes"); err != nil {
		return nil, err
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Nodes < 1 {
		return nil, fmt.Errorf("deploy: independent nodes: need at least one node (got %d)", o.Nodes)
	}
	t := &Independent{nodeSet: newNodeSet()}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	t.version, _ = redisserver.Version(ctx, o.Binary)
	for i := 0; i < o.Nodes; i++ {
		name := fmt.Sprintf("redis-%d", i)
		port, link, err := t.started.peer(o.Proxies, name)
		if err != nil {
			return nil, err
		}
		// redisserver.Start returns once the node answers PING.
		srv, err := redisserver.Start(redisserver.Options{Binary: o.Binary, Port: port})
		if err != nil {
			return nil, fmt.Errorf("deploy: start %s: %w", name, err)
		}
		t.started.servers = append(t.started.servers, srv)
		t.add(Node{Name: name, Announced: link.Addr(), Listen: srv.Addr()}, srv, link)
	}
	t.admin = t.Direct()
	return t, nil
}

// About implements Deployment.
func (t *Independent) About() About {
	return About{Describe: fmt.Sprintf("%s independent nodes (private: %d primaries, no replication)", t.version, len(t.nodes)),
		Topology: TopologyIndependent, Persistence: redisserver.PersistNone}
}

// NewClient implements Deployment: a client of the first node, which holds the run's own data (the poll
// targets). A system that uses every node (Redlock) builds one client per node the same way; see
// NodeClient.
func (t *Independent) NewClient(o ClientOptions, dial Dialer) redis.UniversalClient {
	return NodeClient(t.nodes[0], o, dial)
}

// Direct returns a client of the first node, past every proxy: the harness's own view.
func (t *Independent) Direct() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: t.nodes[0].Listen, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true, MaxRetries: 3})
}

// Admin implements Deployment: a client of the first node (Direct).
func (t *Independent) Admin() redis.UniversalClient { return t.admin }

// Watch implements Deployment: independent nodes are never promoted.
func (t *Independent) Watch(context.Context, func(Promotion)) func() { return func() {} }

// Primary implements Deployment: the first node, whatever the key (every node holds its own copy).
func (t *Independent) Primary(context.Context, string) (Serving, error) {
	return Serving{Node: t.nodes[0].Name}, nil
}

// StartKilled implements Deployment: every killed node starts again, empty, a primary as before.
func (t *Independent) StartKilled(context.Context) ([]Rejoined, error) {
	return t.startKilled("primary")
}

// Save implements Deployment: refused.
func (t *Independent) Save(context.Context) error { return t.noFiles() }

// Reload implements Deployment: refused.
func (t *Independent) Reload(context.Context) error { return t.noFiles() }

func (t *Independent) noFiles() error {
	return refuse("independent nodes run without persistence; use --redis server:rdb or server:aof")
}

// Promote implements Deployment: refused.
func (t *Independent) Promote(context.Context) error {
	return refuse("independent nodes have no replicas to promote; use --redis sentinel")
}

// Migrate implements Deployment: refused.
func (t *Independent) Migrate(context.Context, string, time.Duration) (Migration, error) {
	return Migration{}, refuse("independent nodes have no hash slots to move; use --redis cluster")
}

// Close implements Deployment.
func (t *Independent) Close() error {
	t.closeOnce.Do(func() {
		if t.admin != nil {
			t.closeErr = t.admin.Close()
		}
		t.closeErr = errors.Join(t.closeErr, t.started.close())
	})
	return t.closeErr
}
