package deploy

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Clients of a Redis Cluster: a ClusterClient whose connections go through links of the client's own.

// ClientLinks are one client's proxies, one per node, and the Dialer that routes the announced address
// of each node through its proxy.
type ClientLinks struct {
	// Links maps each node's announced address to this client's proxy for that node.
	Links map[string]Link
}

// NewClientLinks creates one client's proxies (named name-node<i>) with proxies.
func (c *Cluster) NewClientLinks(proxies Proxies, name string) (*ClientLinks, error) {
	l := &ClientLinks{Links: make(map[string]Link, len(c.nodes))}
	for i, n := range c.nodes {
		link, err := proxies.NewLink(fmt.Sprintf("%s-node%d", name, i), n.Server.Addr())
		if err != nil {
			l.Close()
			return nil, err
		}
		l.Links[n.Announced()] = link
	}
	return l, nil
}

// Dialer dials the client's proxy for the node at an announced address; an address that is no
// node's is refused, so no connection leaves the harness's proxies.
func (l *ClientLinks) Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		link, ok := l.Links[addr]
		if !ok {
			return nil, fmt.Errorf("deploy: %s is not an announced address of the cluster", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, link.Addr())
	}
}

// Close removes the client's proxies.
func (l *ClientLinks) Close() {
	for _, link := range l.Links {
		_ = link.Close()
	}
}

// Client returns a go-redis ClusterClient for the cluster through links (nil: the nodes' announced
// proxies), with opts' other fields as given (opts may be nil). ClusterStateReloadInterval defaults
// to 250ms here: go-redis learns a new slot owner from a MOVED reply or from a periodic reload (60s by
// default since v9.22), and a killed primary sends no MOVED, so with the default a client keeps
// dialling the dead node for up to a minute after its replica has taken over.
func (c *Cluster) Client(links *ClientLinks, opts *redis.ClusterOptions) *redis.ClusterClient {
	var o redis.ClusterOptions
	if opts != nil {
		o = *opts
	}
	if o.ClusterStateReloadInterval == 0 {
		o.ClusterStateReloadInterval = 250 * time.Millisecond
	}
	o.Addrs = c.Seeds()
	if links != nil {
		o.Dialer = links.Dialer()
	}
	return redis.NewClusterClient(&o)
}
