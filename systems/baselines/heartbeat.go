package baselines

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func init() { sim.Register("heartbeat-takeover", func() sim.System { return HeartbeatTakeover{} }) }

// HeartbeatTakeover models leader election by heartbeat age: every instance writes its own heartbeat
// key holding a timestamp from its clock every heartbeat interval; the leader key names the leader and
// lives for the election timeout (1.5 heartbeat intervals: 15 s against 10 s in spec time), extended by
// the leader each round. A follower that reads a leader whose heartbeat is older than the election
// timeout (or gone) forces an election: it deletes the leader key, takes it with SET NX PX, and leads
// only if a GET right after names it (double verification). A candidate waits a random start-up delay
// before its first round. Errors keep the current state until the next round. It has no local deadline
// and no fencing token. A model of a design for comparison, not for production.
type HeartbeatTakeover struct{}

// Name implements sim.System.
func (HeartbeatTakeover) Name() string { return "heartbeat-takeover" }

// Description implements sim.Describer.
func (HeartbeatTakeover) Description() string {
	return "baseline: leader election by heartbeat age, a follower takes over a stale leader's key"
}

// Kind reports an election history.
func (HeartbeatTakeover) Kind() string { return "election" }

// Classify implements sim.OpClassifier for the release script.
func (HeartbeatTakeover) Classify(args []any, reply any, err error) (history.Op, bool) {
	return classifyScripts([]script{releaseScript}, args, reply, err)
}

// NewInstance implements sim.System.
func (HeartbeatTakeover) NewInstance(cfg sim.InstanceConfig) (sim.Instance, error) {
	return &heartbeatInstance{cfg: cfg, jit: newJitter(cfg.Seed)}, nil
}

type heartbeatInstance struct {
	cfg    sim.InstanceConfig
	jit    *jitter
	stop   context.CancelFunc
	wg     sync.WaitGroup
	actors []*actor
}

func (h *heartbeatInstance) leaderKey(role string) string { return h.cfg.KeyPrefix + "lease:" + role }
func (h *heartbeatInstance) beatKey(id string) string     { return h.cfg.KeyPrefix + "heartbeat:" + id }

// electionTimeout is 1.5 heartbeat intervals (15 s against 10 s in spec time).
func (h *heartbeatInstance) electionTimeout() time.Duration {
	return h.cfg.Timing.HeartbeatInterval * 3 / 2
}

func (h *heartbeatInstance) Start(ctx context.Context) error {
	ctx, h.stop = context.WithCancel(ctx)
	every := h.cfg.Timing.HeartbeatInterval
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for ctx.Err() == nil {
			cctx, cancel := context.WithTimeout(ctx, h.cfg.Timing.OpTimeout)
			now := strconv.FormatInt(h.cfg.Clock.Now().UnixMilli(), 10)
			_ = h.cfg.Client.Set(cctx, h.beatKey(h.cfg.ID), now, h.cfg.Timing.HeartbeatTTL).Err()
			cancel()
			if !sleepOn(h.cfg.Clock, ctx, h.jit.around(every)) {
				return
			}
		}
	}()
	for _, role := range h.cfg.Targets {
		a := newActor(h.cfg, role)
		h.actors = append(h.actors, a)
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			if !sleepOn(h.cfg.Clock, ctx, h.jit.upTo(every)) { // the random start-up delay
				return
			}
			for ctx.Err() == nil {
				h.round(ctx, a)
				if !sleepOn(h.cfg.Clock, ctx, h.jit.around(every)) {
					return
				}
			}
		}()
	}
	return nil
}

func (h *heartbeatInstance) round(ctx context.Context, a *actor) {
	cctx, cancel := context.WithTimeout(ctx, 4*h.cfg.Timing.OpTimeout)
	defer cancel()
	c, key, timeout := h.cfg.Client, h.leaderKey(a.target), h.electionTimeout()
	leader, err := c.Get(cctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		leader = ""
	case err != nil:
		return // keep the current state until the next round
	}
	if leader == h.cfg.ID {
		_ = c.PExpire(cctx, key, timeout).Err()
		return
	}
	if a.holds() {
		a.end("lost")
	}
	if leader != "" {
		beat, err := c.Get(cctx, h.beatKey(leader)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return
		}
		ms, convErr := strconv.ParseInt(beat, 10, 64)
		fresh := err == nil && convErr == nil && h.cfg.Clock.Now().Sub(time.UnixMilli(ms)) <= timeout
		if fresh {
			return
		}
		// The leader's heartbeat is stale: force an election.
		if err := c.Del(cctx, key).Err(); err != nil {
			return
		}
	}
	if ok, err := c.SetNX(cctx, key, h.cfg.ID, timeout).Result(); err != nil || !ok {
		return
	}
	if v, err := c.Get(cctx, key).Result(); err == nil && v == h.cfg.ID {
		a.begin(ctx)
	}
}

func (h *heartbeatInstance) Stop(ctx context.Context) error {
	if h.stop == nil {
		return nil
	}
	h.stop()
	for _, a := range h.actors {
		if a.holds() {
			a.end("released")
			a.wait()
			cctx, cancel := context.WithTimeout(ctx, h.cfg.Timing.OpTimeout)
			_ = redis.NewScript(releaseScript.src).Run(cctx, h.cfg.Client, []string{h.leaderKey(a.target)}, h.cfg.ID).Err()
			cancel()
		}
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.Timing.OpTimeout)
	_ = h.cfg.Client.Del(cctx, h.beatKey(h.cfg.ID)).Err()
	cancel()
	return waitGroup(ctx, &h.wg)
}
