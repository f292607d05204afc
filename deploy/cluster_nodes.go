package deploy

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// A Redis Cluster's nodes as a Deployment lists them: named redis-0 .. redis-5 in creation order (the
// first three were the initial primaries), a node's peer link being its announced client link (its
// bus link is ClusterNode.BusLink).

// Nodes implements Deployment.
func (c *Cluster) Nodes() []Node {
	out := make([]Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = Node{Name: n.Name, Announced: n.Announced(), Listen: n.Server.Addr()}
	}
	return out
}

func (c *Cluster) byName(name string) (*ClusterNode, error) {
	for _, n := range c.nodes {
		if n.Name == name {
			return n, nil
		}
	}
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.Name
	}
	return nil, fmt.Errorf("deploy: no cluster node %q (nodes: %s)", name, strings.Join(names, ", "))
}

// Server returns the process of the named node.
func (c *Cluster) Server(name string) (*redisserver.Server, error) {
	n, err := c.byName(name)
	if err != nil {
		return nil, err
	}
	return n.Server, nil
}

// PeerLink implements Deployment: the proxy the node announces for its client port, which replicas,
// MIGRATE and redirected clients reach it through.
func (c *Cluster) PeerLink(name string) (Link, error) {
	n, err := c.byName(name)
	if err != nil {
		return nil, err
	}
	return n.Link, nil
}

// About implements Deployment.
func (c *Cluster) About() About {
	return About{
		Describe: fmt.Sprintf("Redis Cluster, %d primaries and %d replicas (cluster-node-timeout %s)", clusterShards, clusterShards*clusterReplicas, c.opts.NodeTimeout),
		Topology: TopologyCluster, Persistence: redisserver.PersistNone,
	}
}

// NewClient implements Deployment: a ClusterClient whose every connection is opened by dial (see Client
// for its state reload interval).
func (c *Cluster) NewClient(o ClientOptions, dial Dialer) redis.UniversalClient {
	return c.Client(nil, &redis.ClusterOptions{
		Dialer:      dial,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: o.PoolSize, MaxRetries: o.MaxRetries, MaxRedirects: 8,
		ContextTimeoutEnabled: true,
	})
}

// Admin implements Deployment: a ClusterClient that reaches every node on its own port, past every
// proxy, made on first use.
func (c *Cluster) Admin() redis.UniversalClient {
	return c.admin.get(func() redis.UniversalClient {
		direct := map[string]string{}
		for _, n := range c.Nodes() {
			direct[n.Announced] = n.Listen
		}
		return c.Client(nil, &redis.ClusterOptions{Dialer: MapDialer(direct, 2*time.Second), MaxRetries: 3,
			MaxRedirects: 8, ContextTimeoutEnabled: true})
	})
}
