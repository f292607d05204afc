package deploy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// IndependentOptions configure a set of independent Redis nodes: the deployment Redlock assumes, N
// primaries with no replication between them and nothing that fails one over to another.
type IndependentOptions struct {
	// Binary is the redis-server executable; default: redis-server from PATH.
	Binary string
	// Nodes is how many nodes to start; default 3.
	Nodes int
	// Proxies creates the peer proxies; default: an embedded toxiproxy of the topology's own, seeded
	// with Seed.
	Proxies chaos.Proxies
	Seed    int64
}

// Independent is a running set of independent Redis nodes. Each has a peer proxy like any node of a
// topology, although independent nodes have no peers: it keeps the contract (every node is known by
// its announced address) so that instance links and faults work as they do on other topologies.
type Independent struct {
	nodeSet
	own     chaos.Proxies
	started started
	version string

	closeOnce sync.Once
	closeErr  error
}

var _ Topology = (*Independent)(nil)

// StartIndependent starts the nodes and returns once each answers PING.
func StartIndependent(ctx context.Context, o IndependentOptions) (_ *Independent, err error) {
	if o.Binary == "" {
		p, ok := redisserver.Available()
		if !ok {
			return nil, ErrNoBinary
		}
		o.Binary = p
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Nodes < 1 {
		return nil, fmt.Errorf("topology: independent nodes: need at least one node (got %d)", o.Nodes)
	}
	t := &Independent{nodeSet: newNodeSet()}
	proxies := o.Proxies
	if proxies == nil {
		e := chaos.NewEmbedded(o.Seed)
		proxies, t.own = e, e
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	t.version, _ = redisserver.Version(ctx, o.Binary)
	for i := 0; i < o.Nodes; i++ {
		name := fmt.Sprintf("redis-%d", i)
		port, link, err := t.started.peer(proxies, name)
		if err != nil {
			return nil, err
		}
		// redisserver.Start returns once the node answers PING.
		srv, err := redisserver.Start(redisserver.Options{Binary: o.Binary, Port: port})
		if err != nil {
			return nil, fmt.Errorf("topology: start %s: %w", name, err)
		}
		t.started.servers = append(t.started.servers, srv)
		t.add(Node{Name: name, Announced: link.Addr(), Listen: srv.Addr()}, srv, link)
	}
	return t, nil
}

// NewClient implements Topology: a client of the first node, which holds the run's own data (the poll
// targets). A system that uses every node (Redlock) builds one client per node the same way; see
// NodeClient.
func (t *Independent) NewClient(o ClientOptions, dial Dialer) redis.UniversalClient {
	return NodeClient(t.nodes[0], o, dial)
}

// NodeClient is a plain client of one node whose connections are opened by dial.
func NodeClient(n Node, o ClientOptions, dial Dialer) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:        n.Announced,
		Dialer:      dial,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: true,
		PoolSize:              o.PoolSize,
		MaxRetries:            o.MaxRetries,
	})
}

// Direct returns a client of the first node, past every proxy: the harness's own view.
func (t *Independent) Direct() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: t.nodes[0].Listen, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true, MaxRetries: 3})
}

// Describe implements Topology.
func (t *Independent) Describe() string {
	return fmt.Sprintf("%s independent nodes (private: %d primaries, no replication)", t.version, len(t.nodes))
}

// Close implements Topology.
func (t *Independent) Close() error {
	t.closeOnce.Do(func() {
		t.closeErr = t.started.close()
		if t.own != nil {
			t.closeErr = errors.Join(t.closeErr, t.own.Close())
		}
	})
	return t.closeErr
}
