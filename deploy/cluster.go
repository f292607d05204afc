package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// A Redis Cluster on loopback: three primaries and three replicas, each a private redis-server that
// dies with its parent (internal/redisserver). Every node sits behind two toxiproxy proxies of its
// own, one for its client port and one for its cluster bus, and announces them
// (cluster-announce-ip/port/bus-port): other nodes gossip with it, its replica replicates from it and
// clients are redirected to it through those proxies, so cutting a node's announced link cuts its
// replication stream and its redirects, and cutting its bus link cuts the gossip the others open to it
// (not enough to isolate it: see below). Clients of the harness get proxies of their own (ClientLinks), one per node, mapped from
// the announced addresses by their go-redis Dialer: a fault on one client's link touches no one else.
//
// The bus goes through a proxy because Redis 7 lets a node announce its bus port apart from its client
// port; the bus protocol itself is plain TCP, so toxiproxy forwards it unchanged. Where it falls short:
// a node announces one bus address to every peer, so its BusLink carries the connections the others
// open to it, while the connections it opens go through their BusLinks. Cutting one node's BusLink
// therefore leaves the others' pings to it unanswered but still delivers its own pings to them, and
// Redis counts any message from a node as a sign of life: the node is not marked failed. Isolating one
// node from the failure detector takes a pause or a kill (or cutting every BusLink, the whole bus). The
// same holds for replication: a replica dials its primary's Link, shared by every replica of it and by
// the redirects clients follow; only clients get links of their own (ClientLinks).

// Cluster sizes: three shards of one primary and one replica, as redis-cli --cluster create
// --cluster-replicas 1 would build.
const (
	clusterShards   = 3
	clusterReplicas = 1
	clusterSlots    = 16384
)

// ClusterOptions configure StartCluster. The zero value is usable except for Proxies.
type ClusterOptions struct {
	// Binary is the redis-server executable; default "redis-server" from PATH.
	Binary string
	// Proxies creates the nodes' announced links (required).
	Proxies Proxies
	// NodeTimeout is cluster-node-timeout: how long a primary may be unreachable before its replica
	// takes over. Default 1s.
	NodeTimeout time.Duration
	// ReadyTimeout bounds the wait for the created cluster to be whole (every slot served, every replica
	// attached, cluster_state:ok everywhere). Default 30s.
	ReadyTimeout time.Duration
	// Name prefixes the proxies' names. Default "cluster".
	Name string

	_ struct{}
}

// ClusterNode is one redis-server of the cluster.
type ClusterNode struct {
	// Name identifies the node in reports and faults: redis-0 .. redis-5, in creation order.
	Name string
	// Server is the process: kill, pause, resume.
	Server *redisserver.Server
	// Link is the proxy the node announces for its client port (what replicas, redirects and
	// MIGRATE use); BusLink the one it announces for its cluster bus.
	Link, BusLink Link
	// ID is the node's cluster node ID.
	ID string
	// Shard is the index of the shard the node was created in (its role may have changed since).
	Shard int

	ctl *redis.Client // control connection to the real port, bypassing every proxy
}

// Control is a client of the node's own port, bypassing every proxy: for the harness's commands
// (WAIT after a write of its own, INFO, ROLE), never for the system under test.
func (n *ClusterNode) Control() *redis.Client { return n.ctl }

// Announced is the address the node announces (its Link's).
func (n *ClusterNode) Announced() string { return n.Link.Addr() }

// Cluster is a running Redis Cluster.
type Cluster struct {
	opts  ClusterOptions
	nodes []*ClusterNode
	admin lazyClient // the harness's own client (Admin)

	mu     sync.Mutex
	closed bool
	// watch is the promotion watcher Watch set (nil when none), and watchCtx ends with its stop;
	// followers are the goroutines following a killed primary's slots.
	watch     func(Promotion)
	watchCtx  context.Context
	followers sync.WaitGroup
}

// StartCluster starts six nodes, creates the cluster (slots split evenly over three primaries, one
// replica each) and waits until Check passes. On error every process and proxy started is gone.
func StartCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	if opts.Proxies == nil {
		return nil, needProxies(nil, "a Redis Cluster")
	}
	if opts.NodeTimeout <= 0 {
		opts.NodeTimeout = time.Second
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 30 * time.Second
	}
	if opts.Name == "" {
		opts.Name = "cluster"
	}
	if _, ok := redisserver.Available(); !ok && opts.Binary == "" {
		return nil, ErrNoBinary
	}
	c := &Cluster{opts: opts}
	ok := false
	defer func() {
		if !ok {
			_ = c.Close()
		}
	}()
	for i := 0; i < clusterShards*(1+clusterReplicas); i++ {
		n, err := c.startNode(i)
		if err != nil {
			return nil, err
		}
		n.Shard = i % clusterShards
		n.Name = fmt.Sprintf("redis-%d", i)
		c.nodes = append(c.nodes, n)
	}
	if err := c.create(ctx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// startNode starts node i on free ports. Its client and bus ports are probed free and then bound by
// redis-server: another process (a parallel test package) can take one in between, so a start that
// fails to bind is tried again on new ports, a few times.
func (c *Cluster) startNode(i int) (*ClusterNode, error) {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var n *ClusterNode
		if n, err = c.startNodeOnce(i); err == nil || !strings.Contains(err.Error(), "Address already in use") {
			return n, err
		}
	}
	return nil, err
}

func (c *Cluster) startNodeOnce(i int) (*ClusterNode, error) {
	port, err := redisserver.FreePort()
	if err != nil {
		return nil, err
	}
	bus, err := redisserver.FreePort()
	if err != nil {
		return nil, err
	}
	loop := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	n := &ClusterNode{}
	if n.Link, err = c.opts.Proxies.NewLink(fmt.Sprintf("%s-node%d", c.opts.Name, i), loop(port)); err != nil {
		return nil, err
	}
	if n.BusLink, err = c.opts.Proxies.NewLink(fmt.Sprintf("%s-node%d-bus", c.opts.Name, i), loop(bus)); err != nil {
		_ = n.Link.Close()
		return nil, err
	}
	_, aport, _ := net.SplitHostPort(n.Link.Addr())
	_, abus, _ := net.SplitHostPort(n.BusLink.Addr())
	n.Server, err = redisserver.Start(redisserver.Options{Binary: c.opts.Binary, Port: port, Args: []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-port", strconv.Itoa(bus),
		"--cluster-node-timeout", strconv.FormatInt(c.opts.NodeTimeout.Milliseconds(), 10),
		"--cluster-announce-ip", "127.0.0.1",
		"--cluster-announce-port", aport,
		"--cluster-announce-bus-port", abus,
		// A replica cut off from its primary still takes over: the scenarios that cut replication
		// and then kill the primary are exactly the ones where the promoted replica lacks writes.
		"--cluster-replica-validity-factor", "0",
		// One shard down does not stop the others: faults are per shard.
		"--cluster-require-full-coverage", "no",
		// A full resynchronisation (a replica attached at creation, a killed node that rejoins) starts
		// at once: the default waits 5 s for more replicas to share the transfer, and a shard has one.
		"--repl-diskless-sync-delay", "0",
	}})
	if err != nil {
		_ = n.Link.Close()
		_ = n.BusLink.Close()
		return nil, fmt.Errorf("deploy: cluster node %d: %w", i, err)
	}
	n.ctl = redis.NewClient(&redis.Options{Addr: n.Server.Addr(), MaxRetries: -1, DialTimeout: 2 * time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	return n, nil
}

// create joins the nodes, assigns slots to the first three and makes the others their replicas.
func (c *Cluster) create(ctx context.Context) error {
	for _, n := range c.nodes {
		id, err := n.ctl.ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("deploy: CLUSTER MYID on %s: %w", n.Server.Addr(), err)
		}
		n.ID = id
	}
	per := clusterSlots / clusterShards
	for i := 0; i < clusterShards; i++ {
		lo, hi := i*per, (i+1)*per-1
		if i == clusterShards-1 {
			hi = clusterSlots - 1
		}
		if err := c.nodes[i].ctl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("deploy: CLUSTER ADDSLOTSRANGE %d %d: %w", lo, hi, err)
		}
	}
	first := c.nodes[0]
	for _, n := range c.nodes[1:] {
		host, port, _ := net.SplitHostPort(n.Announced())
		_, bus, _ := net.SplitHostPort(n.BusLink.Addr())
		if err := first.ctl.Do(ctx, "CLUSTER", "MEET", host, port, bus).Err(); err != nil {
			return fmt.Errorf("deploy: CLUSTER MEET %s: %w", n.Announced(), err)
		}
	}
	// A replica can be attached only once it knows its primary. A node whose handshake did not complete
	// within the node timeout (a loaded machine) is forgotten, and gossip never brings it back: the
	// replica then meets its primary itself, once a second while it does not know it.
	deadline := time.Now().Add(c.opts.ReadyTimeout)
	for _, r := range c.nodes[clusterShards:] {
		primary := c.nodes[r.Shard]
		host, port, _ := net.SplitHostPort(primary.Announced())
		_, bus, _ := net.SplitHostPort(primary.BusLink.Addr())
		var met time.Time
		for {
			err := r.ctl.ClusterReplicate(ctx, primary.ID).Err()
			if err == nil {
				break
			}
			if strings.Contains(err.Error(), "Unknown node") && time.Since(met) >= time.Second {
				met = time.Now()
				_ = r.ctl.Do(ctx, "CLUSTER", "MEET", host, port, bus).Err() // the retry says what failed
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("deploy: CLUSTER REPLICATE %s on %s: %w", primary.ID, r.Announced(), errors.Join(err, ctx.Err()))
			}
			if !sleepCtx(ctx, 50*time.Millisecond) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// Members returns every node, primaries of the initial layout first.
func (c *Cluster) Members() []*ClusterNode { return c.nodes }

// Seeds are the announced addresses of the nodes, for ClusterOptions.Addrs.
func (c *Cluster) Seeds() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Announced()
	}
	return out
}

// Check reports whether the cluster is whole: every live node says cluster_state:ok, every slot is
// served by a live primary, and every live primary has a replica whose replication link is up.
func (c *Cluster) Check(ctx context.Context) error {
	live := c.live()
	if len(live) == 0 {
		return errors.New("deploy: no cluster node is running")
	}
	for _, n := range live {
		info, err := n.ctl.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("deploy: CLUSTER INFO on %s: %w", n.Announced(), err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("deploy: node %s is not cluster_state:ok", n.Announced())
		}
	}
	shards, err := live[0].ctl.ClusterShards(ctx).Result()
	if err != nil {
		return fmt.Errorf("deploy: CLUSTER SHARDS: %w", err)
	}
	covered := 0
	for _, sh := range shards {
		var primary bool
		replicas := 0
		for _, nd := range sh.Nodes {
			if nd.Health != "online" {
				continue
			}
			switch nd.Role {
			case "master":
				primary = true
			case "replica":
				replicas++
			}
		}
		for _, r := range sh.Slots {
			covered += int(r.End-r.Start) + 1
			if !primary {
				return fmt.Errorf("deploy: slots %d-%d have no live primary", r.Start, r.End)
			}
		}
		if len(sh.Slots) > 0 && replicas == 0 {
			return fmt.Errorf("deploy: the shard serving slots %d-%d has no live replica", sh.Slots[0].Start, sh.Slots[0].End)
		}
	}
	if covered != clusterSlots {
		return fmt.Errorf("deploy: %d of %d slots are served", covered, clusterSlots)
	}
	for _, nd := range live {
		role, err := nd.ctl.Do(ctx, "ROLE").Slice()
		if err != nil {
			return fmt.Errorf("deploy: ROLE on %s: %w", nd.Announced(), err)
		}
		if len(role) >= 4 && role[0] == "slave" && role[3] != "connected" {
			return fmt.Errorf("deploy: replica %s is %v to its primary", nd.Announced(), role[3])
		}
	}
	return nil
}

// WaitHealthy waits until Check passes or ctx ends.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	for {
		err := c.Check(ctx)
		if err == nil {
			return nil
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return fmt.Errorf("deploy: cluster not ready: %w", err)
		}
	}
}

// WaitServed waits until every slot is served by a live primary and every live node says
// cluster_state:ok (replicas may be missing: after a kill the promoted shard has none).
func (c *Cluster) WaitServed(ctx context.Context) error {
	for {
		err := c.checkServed(ctx)
		if err == nil {
			return nil
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return fmt.Errorf("deploy: cluster not serving every slot: %w", err)
		}
	}
}

func (c *Cluster) checkServed(ctx context.Context) error {
	for _, n := range c.live() {
		info, err := n.ctl.ClusterInfo(ctx).Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return fmt.Errorf("node %s: not every slot ok", n.Announced())
		}
	}
	return nil
}

func (c *Cluster) live() []*ClusterNode {
	var out []*ClusterNode
	for _, n := range c.nodes {
		if n.Server.Running() {
			out = append(out, n)
		}
	}
	return out
}

// Slot is the hash slot of key.
func (c *Cluster) Slot(ctx context.Context, key string) (int, error) {
	for _, n := range c.live() {
		s, err := n.ctl.ClusterKeySlot(ctx, key).Result()
		if err == nil {
			return int(s), nil
		}
	}
	return 0, errors.New("deploy: no live node answered CLUSTER KEYSLOT")
}

// PrimaryOf returns the live node that serves slot as a primary, as the live nodes see it now.
func (c *Cluster) PrimaryOf(ctx context.Context, slot int) (*ClusterNode, error) {
	n, _, err := c.primaryOf(ctx, slot)
	return n, err
}

// primaryOf is PrimaryOf, with every slot range that node serves ("0-5460,10923-10923").
func (c *Cluster) primaryOf(ctx context.Context, slot int) (*ClusterNode, string, error) {
	for _, n := range c.live() {
		shards, err := n.ctl.ClusterShards(ctx).Result()
		if err != nil {
			continue
		}
		for _, sh := range shards {
			if !serves(sh, slot) {
				continue
			}
			for _, nd := range sh.Nodes {
				if nd.Role == "master" && nd.Health == "online" {
					if node := c.byID(nd.ID); node != nil && node.Server.Running() {
						return node, slotRanges(sh), nil
					}
				}
			}
		}
	}
	return nil, "", fmt.Errorf("deploy: no live primary serves slot %d", slot)
}

// serves reports whether shard serves slot.
func serves(sh redis.ClusterShard, slot int) bool {
	for _, r := range sh.Slots {
		if int(r.Start) <= slot && slot <= int(r.End) {
			return true
		}
	}
	return false
}

// slotRanges lists a shard's slots as comma-separated inclusive ranges.
func slotRanges(sh redis.ClusterShard) string {
	ranges := make([]string, len(sh.Slots))
	for i, r := range sh.Slots {
		ranges[i] = fmt.Sprintf("%d-%d", r.Start, r.End)
	}
	return strings.Join(ranges, ",")
}

// ReplicaOf returns a live replica of primary.
func (c *Cluster) ReplicaOf(ctx context.Context, primary *ClusterNode) (*ClusterNode, error) {
	for _, n := range c.live() {
		if n == primary {
			continue
		}
		role, err := n.ctl.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) < 3 || role[0] != "slave" {
			continue
		}
		if fmt.Sprint(role[1])+":"+fmt.Sprint(role[2]) == primary.Announced() {
			return n, nil
		}
	}
	return nil, fmt.Errorf("deploy: primary %s has no live replica", primary.Announced())
}

func (c *Cluster) byID(id string) *ClusterNode {
	for _, n := range c.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Close kills every node and removes their proxies. It is safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	errs := []error{c.admin.close()}
	for _, n := range c.nodes {
		if n.ctl != nil {
			_ = n.ctl.Close()
		}
		if n.Server != nil {
			errs = append(errs, n.Server.Close())
		}
		if n.Link != nil {
			errs = append(errs, n.Link.Close())
		}
		if n.BusLink != nil {
			errs = append(errs, n.BusLink.Close())
		}
	}
	return errors.Join(errs...)
}
