package sim

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
)

// errDead is what a crashed instance's poll function returns: a dead process sends nothing.
var errDead = errors.New("sim: instance is not running")

// vinstance is one virtual instance: the system's Instance plus everything the harness wraps around it.
type vinstance struct {
	slot   int
	id     string
	link   chaos.Link
	client redis.UniversalClient
	// nodes are the instance's clients of each data node of a topology, for systems that ask for a
	// topology (InstanceConfig.Nodes).
	nodes []*redis.Client
	// clock is the instance's oscillator (its rate is what a drift fault changes); pclock wraps it and
	// is what the system is given, so that a pause stops the system's sense of time too.
	clock  *clock.Drifting
	pclock *clock.Pausable
	sut    Instance
	cancel context.CancelFunc
	// proc is set for an instance of a process system: the OS process the faults act on.
	proc *procInstance
	// gate holds polls while the instance is paused (and from the moment a pause is asked for, so that
	// the pause takes hold at the instance's next poll); calls holds its Redis calls while it is paused,
	// stall while they are stalled.
	gate  gate
	calls gate
	stall gate
	dead  atomic.Bool
	// wire is the pause armed on the instance's conversation with Redis, if any (chaos.WirePause).
	wire atomic.Pointer[wirePause]

	// freezing is set while a pause has been asked for and has not yet taken hold; closing it calls
	// the pause off.
	fmu      sync.Mutex
	freezing chan struct{}
}

// hold blocks a Redis call (before it is sent, and again before its reply is handed back) while the
// instance is paused or its calls are stalled. It does not watch the call's context: a paused process
// does not run, and a stalled call's goroutine is stuck where it is; see chaos.Pause and chaos.Stall.
func (in *vinstance) hold() {
	in.calls.wait()
	in.stall.wait()
	// A pause may begin while the call waited on a stall.
	in.calls.wait()
}

// poll is the function the instance is given to visit an endpoint.
func (in *vinstance) poll(svc *endpointService) func(ctx context.Context, endpoint string, token uint64) error {
	return func(ctx context.Context, endpoint string, token uint64) error {
		if in.dead.Load() {
			return errDead
		}
		// A poll whose context has already ended is never sent: that is the system's own check.
		if err := ctx.Err(); err != nil {
			return err
		}
		// A frozen instance stops here, after it decided to poll and before the request leaves. When it
		// wakes, the request goes out whatever happened meanwhile, as it would from a paused process.
		in.gate.wait()
		return svc.Poll(ctx, in.id, endpoint, token, func() bool { return !in.dead.Load() })
	}
}

// observe records a belief change reported by the system. A local validity deadline (Until, a reading
// of the instance's own clock) is converted into run time: what is left of it on the instance's clock,
// divided by the clock's current rate, after the moment of recording. A renewal is recorded as
// reported, so the checker sees each extension.
func (in *vinstance) observe(rec *history.Recorder, track func(id, endpoint string, b history.Belief)) func(endpoint string, b history.Belief) {
	return func(endpoint string, b history.Belief) {
		if in.dead.Load() {
			return
		}
		track(in.id, endpoint, b)
		at := rec.Now()
		bb := b
		if !bb.Until.IsZero() {
			bb.Deadline = runDeadline(at, bb.Until, in.clock.Now(), in.clock.Rate())
			bb.Until = time.Time{}
		}
		rec.Add(history.Event{Kind: history.KindBelief, At: at, Instance: in.id, Endpoint: endpoint, Belief: &bb})
	}
}

// runDeadline converts a deadline on an instance's clock (until), read as now on that clock at run time
// at, into run time, the clock running at rate times real time. A deadline already passed gives a run
// time at or before at.
func runDeadline(at time.Duration, until, now time.Time, rate float64) time.Duration {
	return at + time.Duration(float64(until.Sub(now))/rate)
}

// gate blocks whoever waits on it while it is closed.
type gate struct {
	mu      sync.Mutex
	ch      chan struct{} // nil when open
	reached chan struct{} // closed when someone first waits on the closed gate
}

func (g *gate) freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
		g.reached = make(chan struct{})
	}
}

// hit returns a channel closed once someone waits on the gate since it was closed (nil when open).
func (g *gate) hit() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reached
}

func (g *gate) thaw() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

func (g *gate) wait() {
	g.mu.Lock()
	ch := g.ch
	if ch != nil {
		select {
		case <-g.reached:
		default:
			close(g.reached)
		}
	}
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}
