package sim

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

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
	client *redis.Client
	clock  *clock.Drifting
	sut    Instance
	cancel context.CancelFunc
	gate   gate
	dead   atomic.Bool
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

// observe records a belief change reported by the system.
func (in *vinstance) observe(rec *history.Recorder, track func(id, endpoint string, b history.Belief)) func(endpoint string, b history.Belief) {
	return func(endpoint string, b history.Belief) {
		if in.dead.Load() {
			return
		}
		track(in.id, endpoint, b)
		bb := b
		rec.Add(history.Event{Kind: history.KindBelief, At: rec.Now(), Instance: in.id, Endpoint: endpoint, Belief: &bb})
	}
}

// gate blocks polls while an instance is frozen.
type gate struct {
	mu sync.Mutex
	ch chan struct{} // nil when open
}

func (g *gate) freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
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
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}
