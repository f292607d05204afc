package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/bubble"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// Virtual time (Options.Virtual): the whole run — the fleet, the faults, the links, the Redis, the
// recorder — runs inside a testing/synctest bubble (internal/bubble), whose clock stands still while
// any goroutine of the run can make progress and jumps to the next timer when none can. A run of 60 s
// at spec timing then costs the CPU its code needs and nothing else, and no machine load can make an
// instance late: the lateness a real run risks from a starved harness does not exist here.
//
// What the bubble holds instead of the real parts: the Redis is deploy.Virtual (miniredis with the
// restart, snapshot, pause and run_id behaviour of redis-server), the links are chaos.Virtual (the same
// toxiproxy toxic chains on in-memory connections). What needs a process, a socket or a server the
// bubble cannot hold is refused before anything starts (checkVirtual), naming the real mode.

// ErrVirtual wraps every refusal of a run in virtual time; it also wraps chaos.ErrUnsupported, so a
// suite counts the run as not applicable, not as failed.
var ErrVirtual = fmt.Errorf("%w: not in virtual time", chaos.ErrUnsupported)

// VirtualStall is how long (real time) a virtual run may go without its clock moving before it is
// declared stuck: some goroutine waits on something no timer of the bubble ends (a sync.Mutex held
// across a call, a real socket).
var VirtualStall = 60 * time.Second

// checkVirtual refuses a run virtual time cannot hold, and returns the persistence of its virtual Redis.
func checkVirtual(o Options, backendSpec string) (string, error) {
	refuse := func(why string) error {
		return fmt.Errorf("%w: %s; run it in real time (drop --virtual)", ErrVirtual, why)
	}
	if _, ok := o.System.(*ProcessSystem); ok {
		return "", refuse(fmt.Sprintf("system %s runs as processes, which a virtual clock cannot hold", o.System.Name()))
	}
	if pu, ok := o.System.(PostgresUser); ok && pu.UsesPostgres() {
		return "", refuse(fmt.Sprintf("system %s uses PostgreSQL, a real server outside the virtual clock", o.System.Name()))
	}
	if o.Toxiproxy != "" {
		return "", refuse("--toxiproxy names a real toxiproxy-server; virtual links are in memory")
	}
	switch o.Backend {
	case "", "auto", "virtual", "server", "embedded":
	default:
		if !strings.HasPrefix(o.Backend, "server:") {
			return "", refuse(fmt.Sprintf("--redis %s is a real deployment; virtual time has its own Redis", o.Backend))
		}
	}
	switch backendSpec {
	case "", "auto", "server", "embedded", "server:" + redisserver.PersistNone:
		return redisserver.PersistNone, nil
	case "server:" + redisserver.PersistRDB:
		return redisserver.PersistRDB, nil
	case "server:" + redisserver.PersistAOF:
		return "", refuse("the scenario restarts Redis from its append-only file, whose loss of the last second the virtual Redis has no model of")
	case TopologySentinel, TopologyCluster:
		return "", refuse(fmt.Sprintf("the scenario needs a %s deployment; the virtual Redis is one node", backendSpec))
	case TopologyIndependent:
		return "", refuse(fmt.Sprintf("system %s needs independent Redis nodes; the virtual Redis is one node", o.System.Name()))
	}
	return "", refuse(fmt.Sprintf("the run needs the deployment %q", backendSpec))
}

// runVirtual runs o inside a bubble. The caller's ctx cannot be waited on inside the bubble (its
// channel is not the bubble's): a goroutine of the run looks at it every virtual 100 ms instead.
func runVirtual(ctx context.Context, o Options) (res Result, err error) {
	if _, err := plan(o); err != nil {
		return res, err
	}
	var stop atomic.Bool
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		select {
		case <-ctx.Done():
			stop.Store(true)
		case <-watchDone:
		}
	}()
	var clock atomic.Int64 // the bubble's clock, for the stall watch
	wall := time.Now()     // the bubble's own clock starts in the year 2000: the reader wants this one
	finished := make(chan struct{})
	go watchStall(&clock, finished)
	berr := bubble.Run(func() {
		base := runtime.NumGoroutine()
		inner, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				clock.Store(time.Now().UnixNano())
				if stop.Load() {
					cancel()
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
		res, err = runStaged(inner, o)
		close(done)
		cancel()
		linger(base)
	})
	close(finished)
	if len(res.History.Events) > 0 || !res.History.Meta.StartedAt.IsZero() {
		res.History.Meta.StartedAt = wall.UTC()
	}
	if berr != nil {
		if len(res.History.Events) > 0 && err == nil {
			// The run ended and produced its history; what was left behind is a clean-up fault.
			res.CleanupErrors = append(res.CleanupErrors, berr.Error())
			return res, nil
		}
		return res, errors.Join(err, berr)
	}
	return res, err
}

// linger gives what a run left winding down (a client's reconnection loop between two tries, a hold
// delivering what it held) virtual time to end: the bubble ends only once every goroutine of it has,
// and a goroutine still sleeping when its first one returns counts as stuck. It waits in virtual
// seconds until no more goroutines run than when the bubble began (base), 10 virtual minutes at most;
// what is left then is reported as a leak.
func linger(base int) {
	for i := 0; i < 600 && runtime.NumGoroutine() > base; i++ {
		time.Sleep(time.Second)
	}
}

// watchStall ends the process, with every goroutine's stack on stderr, when a virtual run's clock has
// not moved for VirtualStall of real time: nothing in the bubble can end the wait, and no error can
// reach the caller while it lasts.
func watchStall(clock *atomic.Int64, finished <-chan struct{}) {
	t := time.NewTicker(VirtualStall / 4)
	defer t.Stop()
	last, since := clock.Load(), time.Now()
	for {
		select {
		case <-finished:
			return
		case now := <-t.C:
			if c := clock.Load(); c != last {
				last, since = c, now
				continue
			}
			if now.Sub(since) >= VirtualStall {
				buf := make([]byte, 64<<20)
				n := runtime.Stack(buf, true)
				fmt.Fprintf(os.Stderr, "sim: a virtual run's clock has not moved for %s of real time: a goroutine of the run waits on something no timer of the bubble ends (a sync.Mutex held across a call, a real socket). Goroutines:\n%s\n", VirtualStall, buf[:n])
				os.Exit(3)
			}
		}
	}
}

// openVirtual opens the virtual Redis and the in-memory links of a run in virtual time.
func openVirtual(o Options, persistence string, td *teardown) (chaos.Proxies, deploy.Deployment, error) {
	v, err := deploy.OpenVirtual(persistence, o.Seed)
	if err != nil {
		return nil, nil, err
	}
	td.add(v.Close)
	proxies := chaos.NewVirtual(o.Seed, v.Dial)
	td.add(proxies.Close)
	return proxies, v, nil
}

// virtualDialer is the Dialer of an instance's client in virtual time (its link's in-memory
// connections), nil in real time (go-redis dials the link's address).
func virtualDialer(p chaos.Proxies) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if v, ok := p.(*chaos.Virtual); ok {
		return v.Dial
	}
	return nil
}
