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

	"github.com/tenurelabs/tenure/chaos"
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
	Proxies chaos.Proxies
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
	Link, BusLink chaos.Link
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

	mu     sync.Mutex
	closed bool
}

// StartCluster starts six nodes, creates the cluster (slots split evenly over three primaries, one
// replica each) and waits until Check passes. On error every process and proxy started is gone.
func StartCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	if opts.Proxies == nil {
		return nil, errors.New("topology: ClusterOptions.Proxies is required (chaos.NewEmbedded, or chaos.NewRemote for a toxiproxy-server)")
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
		return nil, fmt.Errorf("topology: cluster node %d: %w", i, err)
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
			return fmt.Errorf("topology: CLUSTER MYID on %s: %w", n.Server.Addr(), err)
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
			return fmt.Errorf("topology: CLUSTER ADDSLOTSRANGE %d %d: %w", lo, hi, err)
		}
	}
	first := c.nodes[0]
	for _, n := range c.nodes[1:] {
		host, port, _ := net.SplitHostPort(n.Announced())
		_, bus, _ := net.SplitHostPort(n.BusLink.Addr())
		if err := first.ctl.Do(ctx, "CLUSTER", "MEET", host, port, bus).Err(); err != nil {
			return fmt.Errorf("topology: CLUSTER MEET %s: %w", n.Announced(), err)
		}
	}
	// A replica can be attached only once it knows its primary.
	deadline := time.Now().Add(c.opts.ReadyTimeout)
	for _, r := range c.nodes[clusterShards:] {
		primary := c.nodes[r.Shard]
		for {
			err := r.ctl.ClusterReplicate(ctx, primary.ID).Err()
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("topology: CLUSTER REPLICATE %s on %s: %w", primary.ID, r.Announced(), errors.Join(err, ctx.Err()))
			}
			if !sleepCtx(ctx, 50*time.Millisecond) {
				return ctx.Err()
			}
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
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
		return errors.New("topology: no cluster node is running")
	}
	for _, n := range live {
		info, err := n.ctl.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("topology: CLUSTER INFO on %s: %w", n.Announced(), err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("topology: node %s is not cluster_state:ok", n.Announced())
		}
	}
	shards, err := live[0].ctl.ClusterShards(ctx).Result()
	if err != nil {
		return fmt.Errorf("topology: CLUSTER SHARDS: %w", err)
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
				return fmt.Errorf("topology: slots %d-%d have no live primary", r.Start, r.End)
			}
		}
		if len(sh.Slots) > 0 && replicas == 0 {
			return fmt.Errorf("topology: the shard serving slots %d-%d has no live replica", sh.Slots[0].Start, sh.Slots[0].End)
		}
	}
	if covered != clusterSlots {
		return fmt.Errorf("topology: %d of %d slots are served", covered, clusterSlots)
	}
	for _, nd := range live {
		role, err := nd.ctl.Do(ctx, "ROLE").Slice()
		if err != nil {
			return fmt.Errorf("topology: ROLE on %s: %w", nd.Announced(), err)
		}
		if len(role) >= 4 && role[0] == "slave" && role[3] != "connected" {
			return fmt.Errorf("topology: replica %s is %v to its primary", nd.Announced(), role[3])
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
			return fmt.Errorf("topology: cluster not ready: %w", err)
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
			return fmt.Errorf("topology: cluster not serving every slot: %w", err)
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
	return 0, errors.New("topology: no live node answered CLUSTER KEYSLOT")
}

// PrimaryOf returns the live node that serves slot as a primary, as the live nodes see it now.
func (c *Cluster) PrimaryOf(ctx context.Context, slot int) (*ClusterNode, error) {
	for _, n := range c.live() {
		shards, err := n.ctl.ClusterShards(ctx).Result()
		if err != nil {
			continue
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if int(r.Start) > slot || slot > int(r.End) {
					continue
				}
				for _, nd := range sh.Nodes {
					if nd.Role == "master" && nd.Health == "online" {
						if node := c.byID(nd.ID); node != nil && node.Server.Running() {
							return node, nil
						}
					}
				}
			}
		}
	}
	return nil, fmt.Errorf("topology: no live primary serves slot %d", slot)
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
	return nil, fmt.Errorf("topology: primary %s has no live replica", primary.Announced())
}

func (c *Cluster) byID(id string) *ClusterNode {
	for _, n := range c.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// KillPrimary kills (SIGKILL) the primary serving key's slot and waits until another node serves it
// (its replica, promoted by the cluster's own failure detection) and every slot is served again. It
// returns the killed node and the promoted one.
func (c *Cluster) KillPrimary(ctx context.Context, key string) (killed, promoted *ClusterNode, err error) {
	slot, err := c.Slot(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	killed, err = c.PrimaryOf(ctx, slot)
	if err != nil {
		return nil, nil, err
	}
	if err := killed.Server.Kill(); err != nil {
		return killed, nil, fmt.Errorf("topology: kill %s: %w", killed.Announced(), err)
	}
	for {
		if p, err := c.PrimaryOf(ctx, slot); err == nil && p != killed {
			if err := c.WaitServed(ctx); err != nil {
				return killed, p, err
			}
			return killed, p, nil
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return killed, nil, fmt.Errorf("topology: no replica took over slot %d after %s was killed: %w", slot, killed.Announced(), ctx.Err())
		}
	}
}

// MigrateSlot moves slot to the primary to, as redis-cli --cluster reshard does: IMPORTING on the
// target, MIGRATING on the source, MIGRATE of the slot's keys in batches of batch (through the
// target's announced link), then SETSLOT NODE on both and on every other primary. Between the batches
// pause is waited, so clients meet the ASK redirects of a slot half moved. A slot already on to is left
// alone.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to *ClusterNode, batch int, pause time.Duration) error {
	from, err := c.PrimaryOf(ctx, slot)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if batch <= 0 {
		batch = 10
	}
	if err := to.ctl.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID).Err(); err != nil {
		return fmt.Errorf("topology: SETSLOT %d IMPORTING on %s: %w", slot, to.Announced(), err)
	}
	if err := from.ctl.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.ID).Err(); err != nil {
		return fmt.Errorf("topology: SETSLOT %d MIGRATING on %s: %w", slot, from.Announced(), err)
	}
	host, port, _ := net.SplitHostPort(to.Announced())
	for {
		ks, err := from.ctl.ClusterGetKeysInSlot(ctx, slot, batch).Result()
		if err != nil {
			return fmt.Errorf("topology: GETKEYSINSLOT %d: %w", slot, err)
		}
		if len(ks) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range ks {
			args = append(args, k)
		}
		if err := from.ctl.Do(ctx, args...).Err(); err != nil && err.Error() != "NOKEY" {
			return fmt.Errorf("topology: MIGRATE %d keys of slot %d to %s: %w", len(ks), slot, to.Announced(), err)
		}
		if pause > 0 && !sleepCtx(ctx, pause) {
			return ctx.Err()
		}
	}
	// The target first, so that the slot is never owned by nobody; the other primaries learn it now
	// rather than by gossip (replicas refuse SETSLOT and learn it from their primaries).
	done := map[*ClusterNode]bool{}
	for _, n := range append([]*ClusterNode{to, from}, c.live()...) {
		if done[n] {
			continue
		}
		done[n] = true
		if role, err := n.ctl.Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "master" {
			continue
		}
		if err := n.ctl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", to.ID).Err(); err != nil {
			return fmt.Errorf("topology: SETSLOT %d NODE on %s: %w", slot, n.Announced(), err)
		}
	}
	return nil
}

// ClientLinks are one client's proxies, one per node, and the Dialer that routes the announced address
// of each node through its proxy.
type ClientLinks struct {
	// Links maps each node's announced address to this client's proxy for that node.
	Links map[string]chaos.Link
}

// NewClientLinks creates one client's proxies (named name-node<i>) with proxies.
func (c *Cluster) NewClientLinks(proxies chaos.Proxies, name string) (*ClientLinks, error) {
	l := &ClientLinks{Links: make(map[string]chaos.Link, len(c.nodes))}
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
			return nil, fmt.Errorf("topology: %s is not an announced address of the cluster", addr)
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

// Close kills every node and removes their proxies. It is safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
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
