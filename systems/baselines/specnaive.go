package baselines

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func init() { sim.Register("spec-naive", func() sim.System { return SpecNaive{} }) }

// SpecNaive models per-endpoint leases exactly as the polling-lease specification writes them: each
// instance registers a heartbeat key, spreads endpoints over the live instances by plain rendezvous
// hashing (FNV-1a, highest weight wins, no load bound), acquires its endpoints with SET NX PX, renews
// them every RenewInterval with a Lua script that extends the key only while it holds the instance's
// ID, pauses polling an endpoint whose renewal failed with an error until a renewal succeeds again, and
// releases with a Lua compare-and-delete. It has no local deadline (it believes until Redis says
// otherwise), no idempotent acquire (a re-sent SET NX whose first attempt took effect reads as "held by
// another") and no fencing token. A model of a design for comparison, not for production.
type SpecNaive struct{}

// Name implements sim.System.
func (SpecNaive) Name() string { return "spec-naive" }

// Description implements sim.Describer.
func (SpecNaive) Description() string {
	return "baseline: per-endpoint leases as the specification writes them, no local deadline, no fencing"
}

// NewInstance implements sim.System.
func (SpecNaive) NewInstance(cfg sim.InstanceConfig) (sim.Instance, error) {
	return &specNaiveInstance{cfg: cfg, jit: newJitter(cfg.Seed), held: map[string]*actor{}}, nil
}

// Classify implements sim.OpClassifier for the renew and release scripts.
func (SpecNaive) Classify(args []any, reply any, err error) (history.Op, bool) {
	return classifyScripts([]script{renewScript, releaseScript}, args, reply, err)
}

type specNaiveInstance struct {
	cfg sim.InstanceConfig
	jit *jitter

	mu   sync.Mutex
	held map[string]*actor
	stop context.CancelFunc
	ctx  context.Context
	wg   sync.WaitGroup
}

func (n *specNaiveInstance) leaseKey(ep string) string { return n.cfg.KeyPrefix + "lease:" + ep }
func (n *specNaiveInstance) memberKey(id string) string {
	return n.cfg.KeyPrefix + "member:" + id
}

func (n *specNaiveInstance) Start(ctx context.Context) error {
	ctx, n.stop = context.WithCancel(ctx)
	n.ctx = ctx
	t := n.cfg.Timing
	n.loop(ctx, t.HeartbeatInterval, n.heartbeat)
	n.loop(ctx, t.RenewInterval, n.renew)
	n.loop(ctx, t.DiscoveryInterval, n.discover)
	return nil
}

// loop runs f at once and then every jittered interval d until ctx ends.
func (n *specNaiveInstance) loop(ctx context.Context, d time.Duration, f func(context.Context)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for ctx.Err() == nil {
			f(ctx)
			if !sleepOn(n.cfg.Clock, ctx, n.jit.around(d)) {
				return
			}
		}
	}()
}

func (n *specNaiveInstance) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, n.cfg.Timing.OpTimeout)
}

func (n *specNaiveInstance) heartbeat(ctx context.Context) {
	cctx, cancel := n.call(ctx)
	defer cancel()
	_ = n.cfg.Client.Set(cctx, n.memberKey(n.cfg.ID), "1", n.cfg.Timing.HeartbeatTTL).Err()
}

// renew extends every held lease; an error pauses that endpoint's polling, a refusal ends the belief.
func (n *specNaiveInstance) renew(ctx context.Context) {
	ttl := n.cfg.Timing.LeaseTTL.Milliseconds()
	for ep, a := range n.snapshot() {
		cctx, cancel := n.call(ctx)
		res, err := redis.NewScript(renewScript.src).Run(cctx, n.cfg.Client, []string{n.leaseKey(ep)}, n.cfg.ID, ttl).Int64()
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			a.pause(true)
		case res == 1:
			a.pause(false)
		default:
			n.drop(ep, "lost")
		}
	}
}

func (n *specNaiveInstance) snapshot() map[string]*actor {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]*actor, len(n.held))
	for ep, a := range n.held {
		out[ep] = a
	}
	return out
}

// discover reads the targets and the live members, acquires the endpoints rendezvous hashing gives
// this instance and releases the ones it no longer gives it.
func (n *specNaiveInstance) discover(ctx context.Context) {
	targets, ok1 := n.scan(ctx, n.cfg.SessionPrefix, true)
	members, ok2 := n.scan(ctx, n.cfg.KeyPrefix+"member:", false)
	if !ok1 || !ok2 {
		return // a partial view would move endpoints for no reason
	}
	if !contains(members, n.cfg.ID) {
		members = append(members, n.cfg.ID)
	}
	want := map[string]bool{}
	for _, ep := range targets {
		if owner(members, ep) == n.cfg.ID {
			want[ep] = true
		}
	}
	for ep := range n.snapshot() {
		if !want[ep] {
			n.release(ctx, ep)
		}
	}
	held := n.snapshot()
	for _, ep := range targets {
		if !want[ep] || held[ep] != nil {
			continue
		}
		cctx, cancel := n.call(ctx)
		ok, err := n.cfg.Client.SetNX(cctx, n.leaseKey(ep), n.cfg.ID, n.cfg.Timing.LeaseTTL).Result()
		cancel()
		if err == nil && ok {
			a := newActor(n.cfg, ep)
			n.mu.Lock()
			n.held[ep] = a
			n.mu.Unlock()
			a.begin(ctx)
		}
	}
}

// scan lists the names under prefix (for sessions, only those not paused).
func (n *specNaiveInstance) scan(ctx context.Context, prefix string, sessions bool) ([]string, bool) {
	cctx, cancel := context.WithTimeout(ctx, 2*n.cfg.Timing.OpTimeout)
	defer cancel()
	var out []string
	iter := n.cfg.Client.Scan(cctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(cctx) {
		name := strings.TrimPrefix(iter.Val(), prefix)
		if sessions {
			b, err := n.cfg.Client.Get(cctx, iter.Val()).Bytes()
			if err != nil {
				continue
			}
			var doc struct {
				Paused bool `json:"paused"`
			}
			if json.Unmarshal(b, &doc) != nil || doc.Paused {
				continue
			}
		}
		out = append(out, name)
	}
	if iter.Err() != nil {
		return nil, false
	}
	sort.Strings(out)
	return out, true
}

// owner is plain rendezvous hashing: the member with the highest FNV-1a weight for ep.
func owner(members []string, ep string) string {
	best, bestW := "", uint64(0)
	for _, m := range members {
		// FNV-1a over the endpoint, then the member: the other order lets the common suffix wash out
		// the members' differences, and one member would win every endpoint.
		h := fnv.New64a()
		_, _ = h.Write([]byte(ep))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(m))
		w := h.Sum64()
		if best == "" || w > bestW || (w == bestW && m < best) {
			best, bestW = m, w
		}
	}
	return best
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// release ends the belief, then deletes the lease if it still holds this instance's ID.
func (n *specNaiveInstance) release(ctx context.Context, ep string) {
	n.mu.Lock()
	a := n.held[ep]
	n.mu.Unlock()
	n.drop(ep, "released")
	if a != nil {
		a.wait() // the poll in flight ends before another may start
	}
	cctx, cancel := n.call(ctx)
	defer cancel()
	_ = redis.NewScript(releaseScript.src).Run(cctx, n.cfg.Client, []string{n.leaseKey(ep)}, n.cfg.ID).Err()
}

func (n *specNaiveInstance) drop(ep, reason string) {
	n.mu.Lock()
	a := n.held[ep]
	delete(n.held, ep)
	n.mu.Unlock()
	if a != nil {
		a.end(reason)
	}
}

func (n *specNaiveInstance) Stop(ctx context.Context) error {
	if n.stop == nil {
		return nil
	}
	for ep, a := range n.snapshot() {
		n.drop(ep, "released")
		a.wait() // finish the poll in flight before letting another in
		cctx, cancel := context.WithTimeout(ctx, n.cfg.Timing.OpTimeout)
		_ = redis.NewScript(releaseScript.src).Run(cctx, n.cfg.Client, []string{n.leaseKey(ep)}, n.cfg.ID).Err()
		cancel()
	}
	cctx, cancel := context.WithTimeout(ctx, n.cfg.Timing.OpTimeout)
	_ = n.cfg.Client.Del(cctx, n.memberKey(n.cfg.ID)).Err()
	cancel()
	n.stop()
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
