package baselines

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func init() { sim.Register("getexpire", func() sim.System { return GetExpire{} }) }

// GetExpire models a leader lock renewed by GET then EXPIRE: a candidate takes the role with
// SET key id NX EX ttl; the leader renews every RenewInterval by reading the key (GET) and, when it
// still names the leader, extending it (EXPIRE) — two commands, with nothing tying the second to what
// the first saw; a renewal error keeps the leadership and is retried at the next interval; a standby
// retries every RenewInterval; a Lua compare-and-delete releases on shutdown. It has no local deadline
// and no fencing token. A model of a design for comparison, not for production.
type GetExpire struct{}

// Name implements sim.System.
func (GetExpire) Name() string { return "getexpire" }

// Description implements sim.Describer.
func (GetExpire) Description() string {
	return "baseline: a leader lock renewed by GET then EXPIRE, no local deadline, no fencing"
}

// Kind reports an election history.
func (GetExpire) Kind() string { return "election" }

// Classify implements sim.OpClassifier for the release script (SET NX EX, GET and EXPIRE are modelled
// by the harness as they are).
func (GetExpire) Classify(args []any, reply any, err error) (history.Op, bool) {
	return classifyScripts([]script{releaseScript}, args, reply, err)
}

// NewInstance implements sim.System.
func (GetExpire) NewInstance(cfg sim.InstanceConfig) (sim.Instance, error) {
	return &getExpireInstance{cfg: cfg, jit: newJitter(cfg.Seed)}, nil
}

type getExpireInstance struct {
	cfg    sim.InstanceConfig
	jit    *jitter
	stop   context.CancelFunc
	wg     sync.WaitGroup
	actors []*actor
}

// seconds is a TTL as EX and EXPIRE take it: whole seconds, at least one.
func seconds(d time.Duration) time.Duration {
	s := d.Round(time.Second)
	if s < time.Second {
		s = time.Second
	}
	return s
}

func (g *getExpireInstance) Start(ctx context.Context) error {
	ctx, g.stop = context.WithCancel(ctx)
	for _, role := range g.cfg.Targets {
		a := newActor(g.cfg, role)
		g.actors = append(g.actors, a)
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for ctx.Err() == nil {
				g.round(ctx, a)
				if !sleepOn(g.cfg.Clock, ctx, g.jit.around(g.cfg.Timing.RenewInterval)) {
					return
				}
			}
		}()
	}
	return nil
}

func (g *getExpireInstance) key(role string) string { return g.cfg.KeyPrefix + "lease:" + role }

// round is one renewal (for the leader) or one attempt (for a standby).
func (g *getExpireInstance) round(ctx context.Context, a *actor) {
	key, ttl := g.key(a.target), seconds(g.cfg.Timing.LeaseTTL)
	cctx, cancel := context.WithTimeout(ctx, g.cfg.Timing.OpTimeout)
	defer cancel()
	c := g.cfg.Client
	if !a.holds() {
		// go-redis sends EX for a whole number of seconds.
		if ok, err := c.SetNX(cctx, key, g.cfg.ID, ttl).Result(); err == nil && ok {
			a.begin(ctx)
		}
		return
	}
	v, err := c.Get(cctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		a.end("lost")
		return
	case err != nil:
		return // retried at the next interval; leadership is kept
	case v != g.cfg.ID:
		a.end("lost")
		return
	}
	// The gap: the key may expire and be taken between the GET above and this EXPIRE.
	cctx2, cancel2 := context.WithTimeout(ctx, g.cfg.Timing.OpTimeout)
	defer cancel2()
	if ok, err := c.Expire(cctx2, key, ttl).Result(); err == nil && !ok {
		a.end("lost")
	}
}

func (g *getExpireInstance) Stop(ctx context.Context) error {
	if g.stop == nil {
		return nil
	}
	g.stop()
	for _, a := range g.actors {
		if a.holds() {
			a.end("released")
			a.wait()
			cctx, cancel := context.WithTimeout(ctx, g.cfg.Timing.OpTimeout)
			_ = redis.NewScript(releaseScript.src).Run(cctx, g.cfg.Client, []string{g.key(a.target)}, g.cfg.ID).Err()
			cancel()
		}
	}
	return waitGroup(ctx, &g.wg)
}

// waitGroup waits for wg or ctx.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
