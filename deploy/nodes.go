// Package topology starts the multi-node Redis deployments the harness runs against — a primary with
// replicas under Sentinel (sentinel.go), Redis Cluster (cluster.go) — as real redis-server processes on
// loopback, each started through internal/redisserver and so dying with the harness.
//
// # The contract every topology keeps
//
// Every node has two addresses: Listen, where its process listens, and Announced, the address of a
// toxiproxy proxy in front of it (its peer proxy). A node is only ever known by its announced address:
// nodes announce it to each other (replica-announce-ip/port, sentinel announce-ip/port, the cluster's
// announced address), replicas replicate from it, sentinels monitor through it, and every address a
// client is told (by a sentinel, or in a MOVED/ASK reply or CLUSTER SLOTS) is one. So peer traffic —
// replication, sentinel pings and hellos, the cluster bus where it can be announced — flows through the
// peer proxies, before and after a promotion, and a fault on a node's peer link (PeerLink) cuts, slows or
// holds it.
//
// Clients reach nodes through links of their own. NewClient builds a go-redis client (a FailoverClient
// for Sentinel, a ClusterClient for Cluster) whose dialer is handed the announced address of the node
// each connection is for; the caller maps it to its own proxy for that node (MapDialer), so a fault on
// one client's links leaves every other client, and the peer traffic, alone. A client never dials an
// address that is not a node's announced address: the mapping refuses it with an error naming it.
//
// To add a topology: start its processes with redisserver, give each a peer proxy before it starts (pick
// the port, create the proxy towards it, then start the process announcing the proxy), implement
// Topology, and check it is settled before returning from its constructor.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// Node is one process of a topology.
type Node struct {
	// Name identifies the node in reports and faults ("redis-0", "sentinel-2").
	Name string
	// Sentinel is set for a sentinel; other nodes hold data.
	Sentinel bool
	// Announced is the address the node is known by: its peer proxy.
	Announced string
	// Listen is the address of the process itself.
	Listen string
}

// Dialer opens a connection for a client to the node announced at addr.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// ClientOptions are the client settings a topology's client is built with; timeouts bound each call
// (ContextTimeoutEnabled is always on).
type ClientOptions struct {
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	PoolSize, MaxRetries                   int
}

// Topology is a running multi-node deployment.
type Topology interface {
	// Nodes lists every node, data nodes first, in a fixed order.
	Nodes() []Node
	// NewClient builds a client of the topology whose every connection is opened by dial, given the
	// announced address of the node it is for.
	NewClient(o ClientOptions, dial Dialer) redis.UniversalClient
	// Server returns the process of the named node, for faults (kill, pause, restart).
	Server(name string) (*redisserver.Server, error)
	// PeerLink returns the proxy in front of the named node that its peers reach it through.
	PeerLink(name string) (chaos.Link, error)
	// Describe names the topology for reports.
	Describe() string
	// Close stops every process and proxy the topology started.
	Close() error
}

// MapDialer returns a Dialer that connects to local[announced] in place of announced, and refuses an
// address it does not know.
func MapDialer(local map[string]string, timeout time.Duration) Dialer {
	d := net.Dialer{Timeout: timeout}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		to, ok := local[addr]
		if !ok {
			known := make([]string, 0, len(local))
			for k := range local {
				known = append(known, k)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("topology: no link to %s: not the announced address of a node (known: %s)", addr, strings.Join(known, ", "))
		}
		return d.DialContext(ctx, network, to)
	}
}

// ErrNoBinary is returned when redis-server is missing.
var ErrNoBinary = fmt.Errorf("topology: a multi-node topology runs real redis-server processes: %w", redisserver.ErrNoBinary)

// started is what a constructor tears down when it fails half way.
type started struct {
	servers []*redisserver.Server
	links   []chaos.Link
}

func (s *started) close() error {
	var errs []error
	for _, srv := range s.servers {
		errs = append(errs, srv.Close())
	}
	for _, l := range s.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// peer reserves a port for a node and creates its peer proxy towards it.
func (s *started) peer(p chaos.Proxies, name string) (port int, link chaos.Link, err error) {
	port, err = redisserver.FreePort()
	if err != nil {
		return 0, nil, err
	}
	link, err = p.NewLink("peer-"+name, net.JoinHostPort("127.0.0.1", fmt.Sprint(port)))
	if err != nil {
		return 0, nil, err
	}
	s.links = append(s.links, link)
	return port, link, nil
}

// splitPort returns the port of a loopback host:port.
func splitPort(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// waitFor polls cond every 20 ms until it returns nil or timeout passes, then returns its last error.
func waitFor(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// nodeSet is the bookkeeping every topology keeps of its nodes: the nodes in a fixed order, and their
// processes and peer links by name. Topologies embed it for Nodes, ByAnnounced, Server and PeerLink.
type nodeSet struct {
	nodes   []Node
	servers map[string]*redisserver.Server
	links   map[string]chaos.Link
}

func newNodeSet() nodeSet {
	return nodeSet{servers: map[string]*redisserver.Server{}, links: map[string]chaos.Link{}}
}

// add records a started node.
func (ns *nodeSet) add(n Node, srv *redisserver.Server, link chaos.Link) {
	ns.nodes = append(ns.nodes, n)
	ns.servers[n.Name], ns.links[n.Name] = srv, link
}

// Nodes implements Topology.
func (ns *nodeSet) Nodes() []Node { return append([]Node(nil), ns.nodes...) }

// ByAnnounced returns the node announced at addr.
func (ns *nodeSet) ByAnnounced(addr string) (Node, bool) {
	for _, n := range ns.nodes {
		if n.Announced == addr {
			return n, true
		}
	}
	return Node{}, false
}

// Server implements Topology.
func (ns *nodeSet) Server(name string) (*redisserver.Server, error) {
	if s, ok := ns.servers[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("topology: no node %q (nodes: %s)", name, ns.names())
}

// PeerLink implements Topology.
func (ns *nodeSet) PeerLink(name string) (chaos.Link, error) {
	if l, ok := ns.links[name]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("topology: no node %q (nodes: %s)", name, ns.names())
}

func (ns *nodeSet) names() string {
	var s []string
	for _, n := range ns.nodes {
		s = append(s, n.Name)
	}
	return strings.Join(s, ", ")
}
