// Command leasedemo shows Tenure's lease manager at work: three managers in one process share nine
// sessions on a private redis-server (miniredis when redis-server is not installed), one of them
// crashes, and the other two take its sessions over. Timing is a tenth of the specification's (lease
// TTL 3s). It exits on its own within about twenty seconds, or on Ctrl-C, and always stops the server.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/lease"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Stdout)
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "leasedemo:", err)
		os.Exit(1)
	}
}

// backend starts a private redis-server, or miniredis where none is installed. close stops it.
func backend(out io.Writer) (addr string, close func(), err error) {
	srv, err := redisserver.Start(redisserver.Options{})
	if err == nil {
		fmt.Fprintf(out, "backend: private redis-server on %s\n", srv.Addr())
		return srv.Addr(), func() { _ = srv.Close() }, nil
	}
	if !errors.Is(err, redisserver.ErrNoBinary) {
		return "", nil, err
	}
	mr, err := miniredis.Run()
	if err != nil {
		return "", nil, err
	}
	mr.ClockTTL(true) // TTLs in real time, as in Redis
	fmt.Fprintf(out, "backend: miniredis on %s (redis-server not installed)\n", mr.Addr())
	return mr.Addr(), mr.Close, nil
}

type demo struct {
	out   io.Writer
	start time.Time

	mu     sync.Mutex
	names  map[string]string    // instance ID -> A, B, C
	last   map[string]string    // session -> name of the instance that polled it last
	polls  map[string]int       // instance name -> polls
	tokens map[string]uint64    // session -> latest token
	gone   map[string]time.Time // crashed instance name -> when
}

func (d *demo) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "[%5.2fs] ", time.Since(d.start).Seconds())
	fmt.Fprintf(d.out, format+"\n", args...)
}

func run(ctx context.Context, out io.Writer) error {
	addr, closeBackend, err := backend(out)
	if err != nil {
		return err
	}
	defer closeBackend()

	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	sessions := make([]string, 9)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("s%d", i+1)
		v := fmt.Sprintf(`{"id":%q,"paused":false}`, sessions[i])
		if err := client.Set(ctx, "session:"+sessions[i], v, 0).Err(); err != nil {
			return err
		}
	}

	d := &demo{out: out, start: time.Now(), names: map[string]string{}, last: map[string]string{},
		polls: map[string]int{}, tokens: map[string]uint64{}, gone: map[string]time.Time{}}
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	type inst struct {
		name   string
		m      *lease.Manager
		cancel context.CancelFunc
	}
	var insts []*inst
	for _, name := range []string{"A", "B", "C"} {
		cfg := lease.DefaultConfig()
		cfg.LeaseTTL, cfg.RenewInterval, cfg.OpTimeout = 3*time.Second, time.Second, 500*time.Millisecond
		cfg.HeartbeatInterval, cfg.HeartbeatTTL, cfg.DiscoveryInterval = time.Second, 3*time.Second, time.Second
		cfg.PollInterval, cfg.SafetyMargin = 200*time.Millisecond, 200*time.Millisecond
		cfg.InstanceID = lease.NewInstanceID("demo-"+strings.ToLower(name), time.Now(), rnd)
		cfg.Rand = rand.New(rand.NewSource(rnd.Int63()))
		cfg.Logger = slog.New(slog.DiscardHandler)
		cfg.Poll = d.pollAs(name)
		cfg.Observe = d.observe
		d.names[cfg.InstanceID] = name
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer c.Close()
		m, err := lease.New(c, cfg)
		if err != nil {
			return err
		}
		insts = append(insts, &inst{name: name, m: m})
	}
	d.printf("three instances, nine sessions, lease TTL 3s; Redis is fresh, so the first grants wait one TTL (fresh-dataset guard)")
	for _, in := range insts {
		// Not derived from ctx: Ctrl-C stops the instances gracefully (deferred stopAll), not by crash.
		ictx, cancel := context.WithCancel(context.Background())
		in.cancel = cancel
		defer cancel()
		if err := in.m.Start(ictx); err != nil {
			return err
		}
		d.printf("instance %s started: %s", in.name, in.m.ID())
	}
	stopAll := func() {
		for _, in := range insts {
			if in.cancel == nil {
				continue
			}
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			if err := in.m.Stop(sctx); err == nil {
				d.printf("instance %s stopped gracefully", in.name)
			}
			c()
		}
	}
	defer stopAll()

	held := func() map[string][]string {
		out := map[string][]string{}
		for _, in := range insts {
			if in.cancel != nil {
				out[in.name] = in.m.Held()
			}
		}
		return out
	}
	covered := func(per int) bool {
		n := 0
		for _, h := range held() {
			if len(h) != per {
				return false
			}
			n += len(h)
		}
		return n == len(sessions) && d.allPolledByLive(sessions)
	}
	if err := d.waitFor(ctx, 12*time.Second, func() bool { return covered(3) }, held); err != nil {
		return err
	}
	d.printf("balanced: %s", d.table(held()))
	// Let the fleet poll for a while in steady state before the crash.
	if err := d.waitFor(ctx, 10*time.Second, func() bool { return d.minPolls("A", "B", "C") >= 15 }, held); err != nil {
		return err
	}
	d.printf("steady: %s", d.pollCounts())

	victim := insts[1]
	d.printf("crashing instance %s (its context is cancelled: it releases nothing)", victim.name)
	crashed := time.Now()
	victim.cancel()
	victim.cancel = nil
	d.mu.Lock()
	d.gone[victim.name] = crashed
	d.mu.Unlock()
	if err := d.waitFor(ctx, 15*time.Second, func() bool {
		h := held()
		return len(h["A"])+len(h["C"]) == len(sessions) && d.allPolledByLive(sessions)
	}, held); err != nil {
		return err
	}
	d.printf("takeover complete %.1fs after the crash: %s", time.Since(crashed).Seconds(), d.table(held()))
	d.printf("%s", d.pollCounts())
	return nil
}

func (d *demo) minPolls(names ...string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	lowest := -1
	for _, n := range names {
		if lowest < 0 || d.polls[n] < lowest {
			lowest = d.polls[n]
		}
	}
	return lowest
}

func (d *demo) pollCounts() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("polls so far: A=%d B=%d C=%d", d.polls["A"], d.polls["B"], d.polls["C"])
}

func (d *demo) pollAs(name string) lease.PollFunc {
	return func(ctx context.Context, p lease.Poll) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.last[p.Endpoint] = name
		d.polls[name]++
		return nil
	}
}

func (d *demo) observe(e lease.Event) {
	if e.Kind == lease.EventRenewed {
		return // every renewal of every lease: too much for the demo's screen
	}
	d.mu.Lock()
	name := d.names[e.Instance]
	if e.Kind == lease.EventAcquired {
		d.tokens[e.Endpoint] = e.Token
	}
	d.mu.Unlock()
	d.printf("%s %-8s %s (token %d, %s)", name, e.Kind, e.Endpoint, e.Token, e.Reason)
}

// allPolledByLive reports whether the last poll of every session was by an instance that is alive.
func (d *demo) allPolledByLive(sessions []string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range sessions {
		who, ok := d.last[s]
		if !ok {
			return false
		}
		if _, dead := d.gone[who]; dead {
			return false
		}
	}
	return true
}

func (d *demo) table(h map[string][]string) string {
	var names []string
	for n := range h {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s polls %v  ", n, h[n])
	}
	return strings.TrimSpace(b.String())
}

// waitFor prints who polls what once a second until cond holds, the timeout passes or ctx ends.
func (d *demo) waitFor(ctx context.Context, timeout time.Duration, cond func() bool, held func() map[string][]string) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lastPrint := time.Now()
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("no convergence within %s: %s", timeout, d.table(held()))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if time.Since(lastPrint) >= time.Second {
			lastPrint = time.Now()
			d.printf("%s", d.table(held()))
		}
	}
	return nil
}
