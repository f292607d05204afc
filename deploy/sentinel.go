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

// MasterName is the name the sentinels monitor the primary under.
const MasterName = "tenure"

// Spec-time Sentinel timings, at time scale 1. Redis's shipped defaults (30 s down-after, 180 s failover
// timeout) are slower than a lease TTL; deployments that use Sentinel for locks commonly tune them down
// to these.
const (
	SpecDownAfter       = 5 * time.Second
	SpecFailoverTimeout = 60 * time.Second
)

// SentinelOptions configure a Sentinel topology. The zero value starts one primary, two replicas and
// three sentinels (quorum 2) at spec timing.
type SentinelOptions struct {
	// Binary is the redis-server executable; default: redis-server from PATH.
	Binary string
	// Replicas (default 2) and Sentinels (default 3) are how many of each to start.
	Replicas, Sentinels int
	// Quorum is the number of sentinels that must agree the primary is down; default a majority.
	Quorum int
	// TimeScale multiplies the Sentinel timings (down-after, failover timeout); default 1. Each scaled
	// timing has a floor: down-after 2 s, failover timeout 2 s. A sentinel pings each node once per
	// period of its own (1 s, or down-after if shorter) that no setting scales, and after a failover it
	// links to the promoted primary afresh: the first PING on that link may go a whole period after the
	// link was made, and the node is down once down-after passes without a reply since then. With
	// down-after at 500 ms the sentinels declared each freshly promoted primary down within about half a
	// second and failed over again and again (three runs of sentinel-replication-lag in four); at 1 s,
	// equal to the period, now and then (sentinel-primary-kill under load, sentinel-replication-lag on a
	// quiet machine: the new primary declared down 2.2 s after its promotion, and replaced). Neither is
	// the fault being studied. At 2 s the first PING has a whole period to be answered.
	TimeScale float64
	// DownAfter and FailoverTimeout override the spec timings (before scaling) when non-zero.
	DownAfter, FailoverTimeout time.Duration
	// Proxies creates the peer proxies (required).
	Proxies Proxies
	// ReadyTimeout bounds the wait for the topology to settle; default 30 s.
	ReadyTimeout time.Duration
	// LogDir, when set, receives each node's log (<name>.log, at level notice) when the topology
	// closes: what the sentinels decided and when.
	LogDir string
}

// Sentinel is a running primary/replica set under Sentinel.
type Sentinel struct {
	opts      SentinelOptions
	nodeSet   // data nodes, then sentinels
	started   started
	downAfter time.Duration
	failover  time.Duration
	version   string

	admin     *redis.Client // the harness's own client (Admin)
	closeOnce sync.Once
	closeErr  error
}

var _ Deployment = (*Sentinel)(nil)

func scaledFloor(d time.Duration, scale float64, floor time.Duration) time.Duration {
	return max(time.Duration(float64(d)*scale), floor)
}

// StartSentinel starts the processes and proxies, and returns once every sentinel agrees on the
// primary and sees every replica and every other sentinel, and every replica is in sync.
func StartSentinel(ctx context.Context, o SentinelOptions) (_ *Sentinel, err error) {
	if o.Binary, err = binary(o.Binary); err != nil {
		return nil, err
	}
	if err := needProxies(o.Proxies, "a Sentinel set"); err != nil {
		return nil, err
	}
	if o.Replicas == 0 {
		o.Replicas = 2
	}
	if o.Sentinels == 0 {
		o.Sentinels = 3
	}
	if o.Replicas < 0 || o.Sentinels < 1 {
		return nil, fmt.Errorf("deploy: a Sentinel topology needs at least one sentinel and no negative replica count (got %d replicas, %d sentinels)", o.Replicas, o.Sentinels)
	}
	if o.Quorum == 0 {
		o.Quorum = o.Sentinels/2 + 1
	}
	if o.Quorum < 1 || o.Quorum > o.Sentinels {
		return nil, fmt.Errorf("deploy: quorum %d must lie between 1 and the number of sentinels (%d)", o.Quorum, o.Sentinels)
	}
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	if o.TimeScale < 0 {
		return nil, fmt.Errorf("deploy: time scale must be positive (got %g)", o.TimeScale)
	}
	if o.DownAfter == 0 {
		o.DownAfter = SpecDownAfter
	}
	if o.FailoverTimeout == 0 {
		o.FailoverTimeout = SpecFailoverTimeout
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 30 * time.Second
	}
	t := &Sentinel{
		opts:      o,
		nodeSet:   newNodeSet(),
		downAfter: scaledFloor(o.DownAfter, o.TimeScale, 2*time.Second),
		failover:  scaledFloor(o.FailoverTimeout, o.TimeScale, 2*time.Second),
	}
	proxies := o.Proxies
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	t.version, _ = redisserver.Version(ctx, o.Binary)

	// Data nodes: redis-0 starts as the primary; every node announces its peer proxy.
	var primaryPort string
	for i := 0; i <= o.Replicas; i++ {
		name := fmt.Sprintf("redis-%d", i)
		port, link, err := t.started.peer(proxies, name)
		if err != nil {
			return nil, err
		}
		args := []string{
			"--replica-announce-ip", "127.0.0.1",
			"--replica-announce-port", splitPort(link.Addr()),
			// The initial sync and every resync after a promotion go straight over the socket.
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		}
		if i == 0 {
			primaryPort = splitPort(link.Addr())
		} else {
			args = append(args, "--replicaof", "127.0.0.1", primaryPort)
		}
		if o.LogDir != "" {
			args = append(args, "--loglevel", "notice")
		}
		srv, err := redisserver.Start(redisserver.Options{Binary: o.Binary, Port: port, Args: args})
		if err != nil {
			return nil, fmt.Errorf("deploy: start %s: %w", name, err)
		}
		t.started.servers = append(t.started.servers, srv)
		t.add(Node{Name: name, Announced: link.Addr(), Listen: srv.Addr()}, srv, link)
	}
	for i := 0; i < o.Sentinels; i++ {
		name := fmt.Sprintf("sentinel-%d", i)
		port, link, err := t.started.peer(proxies, name)
		if err != nil {
			return nil, err
		}
		conf := strings.Join([]string{
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %s %d", MasterName, primaryPort, o.Quorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", MasterName, t.downAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", MasterName, t.failover.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", MasterName),
			"sentinel announce-ip 127.0.0.1",
			"sentinel announce-port " + splitPort(link.Addr()),
			"",
		}, "\n")
		var args []string
		if o.LogDir != "" {
			args = []string{"--loglevel", "notice"}
		}
		srv, err := redisserver.Start(redisserver.Options{Binary: o.Binary, Port: port, Config: conf, Sentinel: true, Args: args})
		if err != nil {
			return nil, fmt.Errorf("deploy: start %s: %w", name, err)
		}
		t.started.servers = append(t.started.servers, srv)
		t.add(Node{Name: name, Sentinel: true, Announced: link.Addr(), Listen: srv.Addr()}, srv, link)
	}
	if err := waitFor(ctx, o.ReadyTimeout, t.settled); err != nil {
		return nil, fmt.Errorf("deploy: the Sentinel set did not settle within %s: %w", o.ReadyTimeout, err)
	}
	t.admin = t.Direct()
	return t, nil
}

// DownAfter and FailoverTimeout are the sentinels' timings, scaled.
func (t *Sentinel) DownAfter() time.Duration       { return t.downAfter }
func (t *Sentinel) FailoverTimeout() time.Duration { return t.failover }

// DataNodes and Sentinels list the nodes of each kind.
func (t *Sentinel) DataNodes() []Node { return t.filter(false) }
func (t *Sentinel) Sentinels() []Node { return t.filter(true) }

func (t *Sentinel) filter(sentinel bool) []Node {
	var out []Node
	for _, n := range t.nodes {
		if n.Sentinel == sentinel {
			out = append(out, n)
		}
	}
	return out
}

// About implements Deployment.
func (t *Sentinel) About() About {
	return About{Describe: t.describe(), Topology: TopologySentinel, Persistence: redisserver.PersistNone}
}

func (t *Sentinel) describe() string {
	return fmt.Sprintf("%s Sentinel set (private: 1 primary, %d replicas, %d sentinels, quorum %d, down-after %s, failover-timeout %s)",
		t.version, t.opts.Replicas, t.opts.Sentinels, t.opts.Quorum, t.downAfter, t.failover)
}

// NewClient implements Deployment: a FailoverClient that asks the sentinels for the primary and follows
// its promotions. Sentinel and data connections alike are opened by dial.
func (t *Sentinel) NewClient(o ClientOptions, dial Dialer) redis.UniversalClient {
	return t.failoverClient(o, dial)
}

func (t *Sentinel) failoverClient(o ClientOptions, dial Dialer) *redis.Client {
	var addrs []string
	for _, n := range t.Sentinels() {
		addrs = append(addrs, n.Announced)
	}
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    MasterName,
		SentinelAddrs: addrs,
		Dialer:        dial,
		DialTimeout:   o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: true,
		PoolSize:              o.PoolSize,
		MaxRetries:            o.MaxRetries,
	})
}

// Direct returns a client of the topology that dials the nodes' processes directly, past every proxy:
// the harness's own view (sessions, checks), which no fault on a link disturbs.
func (t *Sentinel) Direct() *redis.Client {
	local := map[string]string{}
	for _, n := range t.nodes {
		local[n.Announced] = n.Listen
	}
	return t.failoverClient(ClientOptions{DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 4, MaxRetries: 3},
		MapDialer(local, 2*time.Second))
}

// sentinelClient talks to one sentinel directly.
func (t *Sentinel) sentinelClient(n Node) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: n.Listen, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
}

// PrimaryNode returns the data node a majority of the sentinels name as the primary.
func (t *Sentinel) PrimaryNode(ctx context.Context) (Node, error) {
	votes := map[string]int{}
	var errs []error
	for _, s := range t.Sentinels() {
		c := t.sentinelClient(s)
		a, err := c.GetMasterAddrByName(ctx, MasterName).Result()
		_ = c.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		votes[net.JoinHostPort(a[0], a[1])]++
	}
	for addr, v := range votes {
		if v > len(t.Sentinels())/2 {
			if n, ok := t.ByAnnounced(addr); ok {
				return n, nil
			}
			return Node{}, fmt.Errorf("deploy: the sentinels name %s as primary, which is not a node's announced address", addr)
		}
	}
	return Node{}, fmt.Errorf("deploy: no majority of sentinels agrees on the primary (%v): %w", votes, errors.Join(errs...))
}

// settled checks that every sentinel names the same primary, sees every replica up and every other
// sentinel, and that the primary has every replica online.
func (t *Sentinel) settled(ctx context.Context) error {
	p, err := t.PrimaryNode(ctx)
	if err != nil {
		return err
	}
	want := len(t.DataNodes()) - 1
	for _, s := range t.Sentinels() {
		c := t.sentinelClient(s)
		m, err := c.Master(ctx, MasterName).Result()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("deploy: %s: SENTINEL MASTER: %w", s.Name, err)
		}
		if got := net.JoinHostPort(m["ip"], m["port"]); got != p.Announced {
			return fmt.Errorf("deploy: %s names %s as primary, the majority %s", s.Name, got, p.Announced)
		}
		if strings.Contains(m["flags"], "down") {
			return fmt.Errorf("deploy: %s sees the primary as %s", s.Name, m["flags"])
		}
		if m["num-slaves"] != strconv.Itoa(want) {
			return fmt.Errorf("deploy: %s sees %s replicas of %d", s.Name, m["num-slaves"], want)
		}
		if m["num-other-sentinels"] != strconv.Itoa(len(t.Sentinels())-1) {
			return fmt.Errorf("deploy: %s sees %s other sentinels of %d", s.Name, m["num-other-sentinels"], len(t.Sentinels())-1)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: p.Listen, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("deploy: primary %s: INFO replication: %w", p.Name, err)
	}
	if online := strings.Count(info, "state=online"); online != want {
		return fmt.Errorf("deploy: primary %s has %d of %d replicas online", p.Name, online, want)
	}
	return nil
}

// WaitSettled waits until the set is settled again (after a promotion, say), within timeout.
func (t *Sentinel) WaitSettled(ctx context.Context, timeout time.Duration) error {
	return waitFor(ctx, timeout, t.settled)
}

// WatchPromotions calls fn once for each promotion any sentinel announces, until ctx ends. It subscribes
// on every sentinel directly (past the proxies, so a fault on a sentinel's links does not hide a
// promotion from the record) and reports each new primary once, from whichever sentinel tells first.
func (t *Sentinel) WatchPromotions(ctx context.Context, fn func(Promotion)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	last := t.nodes[0].Name
	if p, err := t.PrimaryNode(ctx); err == nil {
		last = p.Name
	}
	var wg sync.WaitGroup
	for _, s := range t.Sentinels() {
		wg.Add(1)
		go func(s Node) {
			defer wg.Done()
			c := t.sentinelClient(s)
			defer c.Close()
			sub := c.Subscribe(ctx, "+switch-master")
			defer sub.Close()
			ch := sub.Channel()
			for {
				select {
				case <-ctx.Done():
					return
				case m, ok := <-ch:
					if !ok {
						return
					}
					// "<name> <old ip> <old port> <new ip> <new port>"
					f := strings.Fields(m.Payload)
					if len(f) != 5 || f[0] != MasterName {
						continue
					}
					to, ok := t.ByAnnounced(net.JoinHostPort(f[3], f[4]))
					if !ok {
						continue
					}
					from, _ := t.ByAnnounced(net.JoinHostPort(f[1], f[2]))
					mu.Lock()
					fresh := to.Name != last
					if fresh {
						last = to.Name
					}
					mu.Unlock()
					if fresh {
						fn(Promotion{From: from.Name, To: to.Name, At: time.Now()})
					}
				}
			}
		}(s)
	}
	return func() { cancel(); wg.Wait() }
}

// Failover asks a sentinel for a graceful failover (SENTINEL FAILOVER): it promotes a replica without
// waiting for the primary to be found down.
func (t *Sentinel) Failover(ctx context.Context) error {
	var errs []error
	for _, s := range t.Sentinels() {
		c := t.sentinelClient(s)
		err := c.Failover(ctx, MasterName).Err()
		_ = c.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
	}
	return fmt.Errorf("deploy: SENTINEL FAILOVER: %w", errors.Join(errs...))
}

// Close implements Deployment.
func (t *Sentinel) Close() error {
	t.closeOnce.Do(func() {
		if t.admin != nil {
			t.closeErr = t.admin.Close()
		}
		if t.opts.LogDir != "" {
			t.closeErr = errors.Join(t.closeErr, t.saveLogs())
		}
		t.closeErr = errors.Join(t.closeErr, t.started.close())
	})
	return t.closeErr
}
