package deploy

import (
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// Cluster as a Topology: nodes are named redis-0 .. redis-5 in creation order (the first three were
// the initial primaries), and a node's peer link is its announced client link (its bus link is
// ClusterNode.BusLink).
var _ Topology = (*Cluster)(nil)

// Nodes implements Topology.
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
	return nil, fmt.Errorf("topology: no cluster node %q (nodes: %s)", name, strings.Join(names, ", "))
}

// Server implements Topology.
func (c *Cluster) Server(name string) (*redisserver.Server, error) {
	n, err := c.byName(name)
	if err != nil {
		return nil, err
	}
	return n.Server, nil
}

// PeerLink implements Topology: the proxy the node announces for its client port, which replicas,
// MIGRATE and redirected clients reach it through.
func (c *Cluster) PeerLink(name string) (chaos.Link, error) {
	n, err := c.byName(name)
	if err != nil {
		return nil, err
	}
	return n.Link, nil
}

// Describe implements Topology.
func (c *Cluster) Describe() string {
	return fmt.Sprintf("Redis Cluster, %d primaries and %d replicas (cluster-node-timeout %s)", clusterShards, clusterShards*clusterReplicas, c.opts.NodeTimeout)
}

// NewClient implements Topology: a ClusterClient whose every connection is opened by dial (see Client
// for its state reload interval).
func (c *Cluster) NewClient(o ClientOptions, dial Dialer) redis.UniversalClient {
	return c.Client(nil, &redis.ClusterOptions{
		Dialer:      dial,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: o.PoolSize, MaxRetries: o.MaxRetries, MaxRedirects: 8,
		ContextTimeoutEnabled: true,
	})
}
