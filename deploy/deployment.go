package deploy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Deployment is a Redis deployment: what it is, how to reach it, and how to hurt it. Every method is
// safe for concurrent use. What each verb means for each deployment, and which a deployment refuses,
// is in the package documentation.
type Deployment interface {
	// About says what the deployment is.
	About() About
	// Nodes lists its processes in a fixed order, data nodes first (sentinels last). A single node is
	// "redis-0", its announced address its own.
	Nodes() []Node
	// NewClient builds a client of the deployment (a plain client of one node, a Sentinel
	// FailoverClient, a ClusterClient) whose every connection is opened by dial, given the announced
	// address of the node it is for.
	NewClient(o ClientOptions, dial Dialer) redis.UniversalClient
	// Admin is the harness's own client, straight to the processes past every proxy (sessions,
	// start-up checks, clean-up). It belongs to the deployment, which closes it.
	Admin() redis.UniversalClient
	// Watch calls fn for every promotion of a replica until stop is called (or ctx ends), from
	// wherever the deployment learns of them: the sentinels' announcements, or, on a Redis Cluster, a
	// replica found serving the slots of a primary that Kill ended.
	Watch(ctx context.Context, fn func(Promotion)) (stop func())

	// Primary resolves the data node that serves key as a primary now; "" asks for the deployment's
	// own primary (see the package documentation). It changes nothing.
	Primary(ctx context.Context, key string) (Serving, error)
	// Kill ends a node's process at once (SIGKILL): what it had not written elsewhere is lost.
	Kill(ctx context.Context, node string) error
	// Pause freezes a node's process (SIGSTOP) until resume is called (SIGCONT): its connections stay
	// open and nothing is answered meanwhile.
	Pause(ctx context.Context, node string) (resume func() error, err error)
	// StartKilled starts every data node that Kill ended again, on its own address and empty, and
	// returns once each answers (on a Redis Cluster: once each has rejoined), naming what each became.
	StartKilled(ctx context.Context) ([]Rejoined, error)
	// Save writes a snapshot of the dataset to the deployment's files now.
	Save(ctx context.Context) error
	// Reload kills the primary (SIGKILL) and starts it again loading what its files hold.
	Reload(ctx context.Context) error
	// Promote has a replica promoted in place of a primary that is up (a graceful failover).
	Promote(ctx context.Context) error
	// Migrate moves key's hash slot to another primary, one key at a time with pause between them,
	// and returns once the slot is served there.
	Migrate(ctx context.Context, key string, pause time.Duration) (Migration, error)
	// PeerLink is the proxy a node's peers reach it through (replication, the sentinels, the cluster's
	// redirects): a fault on it cuts the node off from its peers while clients, on links of their
	// own, still reach it.
	PeerLink(node string) (Link, error)

	// Close stops every process and removes every proxy the deployment started (an address it was
	// given is left as it is). It is safe to call more than once.
	Close() error
}

// Topologies: how a deployment's data is spread over nodes.
const (
	// TopologySingle is one Redis node (a private server, miniredis, a container, a user's address).
	TopologySingle = ""
	// TopologySentinel is a primary and replicas under Sentinel, which promotes a replica when the
	// primary is found down.
	TopologySentinel = "sentinel"
	// TopologyCluster is a Redis Cluster: shards of one primary and one replica each, every hash slot
	// served by one shard.
	TopologyCluster = "cluster"
	// TopologyIndependent is independent nodes with no replication between them (Redlock's
	// deployment); the first node holds data that is not replicated across them (the poll targets).
	TopologyIndependent = "independent"
)

// About is what a deployment is.
type About struct {
	// Describe names it for reports ("redis-server 7.0.15 (private, 127.0.0.1:40123)").
	Describe string
	// Topology is one of the Topology constants.
	Topology string
	// Persistence is what a restart keeps: "none", "rdb" or "aof".
	Persistence string
	// Shared is set when the deployment holds data that is not the harness's (a user's address): a
	// run then keeps its keys under a prefix of its own, deletes only those, and never flushes.
	Shared bool
}

// Node is one process of a deployment.
type Node struct {
	// Name identifies the node in reports and faults ("redis-0", "sentinel-2").
	Name string
	// Sentinel is set for a sentinel; other nodes hold data.
	Sentinel bool
	// Announced is the address the node is known by: by its peers, and in every address a client is
	// told (by a sentinel, in a MOVED or ASK redirect). On several nodes it is the node's peer proxy.
	Announced string
	// Listen is the address of the process itself.
	Listen string
}

// Serving is a node that serves a key as a primary, as Primary resolved it.
type Serving struct {
	// Node is the node's name.
	Node string
	// Slot is the key's hash slot, and Slots every slot the node serves as comma-separated inclusive
	// ranges ("0-5460,10923"), on a Redis Cluster; elsewhere 0 and "".
	Slot  int
	Slots string
}

// Rejoined is a node StartKilled started again, and what it became.
type Rejoined struct {
	// Node is the node's name ("redis-0").
	Node string
	// Role is "primary" or "replica"; "" where the deployment decides later and StartKilled does not
	// wait for it (a Sentinel set's sentinels reconfigure a returning node on their own time).
	Role string
	// Of names the primary a replica copies ("" for a primary).
	Of string
}

func (r Rejoined) String() string {
	switch {
	case r.Of != "":
		return fmt.Sprintf("%s: %s of %s", r.Node, r.Role, r.Of)
	case r.Role != "":
		return r.Node + ": " + r.Role
	}
	return r.Node
}

// Promotion is a replica promoted in place of a primary.
type Promotion struct {
	// From and To name the old and the new primary.
	From, To string
	// At is when the deployment learnt of it.
	At time.Time
}

// Migration is a slot Migrate moved.
type Migration struct {
	// From and To name the primaries the slot left and joined.
	From, To string
	// Slot is the hash slot moved.
	Slot int
}

// Link is a proxy in front of a node: the faults a deployment's peer links take. A chaos.Link is one.
type Link interface {
	// Addr is the proxy's address.
	Addr() string
	// Partition drops all data both ways; Heal removes every fault.
	Partition() error
	Heal() error
	// Latency delays data both ways by latency ± jitter.
	Latency(latency, jitter time.Duration) error
	// Reset closes every open connection; Kill closes them and refuses new ones for good.
	Reset() error
	Kill() error
	// Close removes the proxy.
	Close() error
}

// Proxies creates the proxies a deployment of several nodes puts in front of each node and announces
// (see chaos.ForDeploy). The deployment closes the links it created; the Proxies are their owner's.
type Proxies interface {
	// NewLink creates a proxy named name that forwards a free loopback port to upstream.
	NewLink(name, upstream string) (Link, error)
}

// ErrUnsupported is wrapped by every verb a deployment refuses; the message says what would do it.
var ErrUnsupported = errors.New("fault not supported here")

// refuse is the error of a verb a deployment refuses: what it cannot do, and what can.
func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// noNode is the error for a node name a deployment does not have.
func noNode(name string, nodes []Node) error {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return fmt.Errorf("deploy: no node %q (nodes: %s)", name, joinNames(names))
}
