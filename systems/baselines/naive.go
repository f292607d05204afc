package baselines

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func init() { sim.Register("naive", func() sim.System { return Naive{} }) }

// Naive is the classic lease design, shipped as a baseline so the harness can show what it catches:
// SET NX PX to acquire, an unconditional PEXPIRE to renew, an unconditional DEL to release, no local
// deadline (a holder believes it holds until Redis tells it otherwise, and ignores errors), no fencing
// token, no balancing. It is deliberately unsafe: do not use it for anything but comparison.
type Naive struct{}

// Name implements sim.System.
func (Naive) Name() string { return "naive" }

// Description implements sim.Describer.
func (Naive) Description() string {
	return "baseline: SET NX PX, unconditional PEXPIRE and DEL, no local deadline, no fencing"
}

// NewInstance implements sim.System.
func (Naive) NewInstance(cfg sim.InstanceConfig) (sim.Instance, error) {
	return &naiveInstance{cfg: cfg, held: map[string]context.CancelFunc{}}, nil
}

type naiveInstance struct {
	cfg sim.InstanceConfig

	mu   sync.Mutex
	held map[string]context.CancelFunc
	wg   sync.WaitGroup
	stop context.CancelFunc
}

func (n *naiveInstance) key(ep string) string { return n.cfg.KeyPrefix + "lease:" + ep }

// log is the instance's logger; it logs the same kind of lines as the reference.
func (n *naiveInstance) log() *slog.Logger {
	if n.cfg.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return n.cfg.Logger
}

func (n *naiveInstance) Start(ctx context.Context) error {
	ctx, n.stop = context.WithCancel(ctx)
	n.log().Info("naive: started", "instance", n.cfg.ID)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			n.tick(ctx)
			if !clock.Sleep(n.cfg.Clock, n.cfg.Timing.RenewInterval, ctx.Done()) {
				return
			}
		}
	}()
	return nil
}

func (n *naiveInstance) targets(ctx context.Context) []string {
	var out []string
	iter := n.cfg.Client.Scan(ctx, 0, n.cfg.SessionPrefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		b, err := n.cfg.Client.Get(ctx, iter.Val()).Bytes()
		if err != nil {
			continue
		}
		var doc struct {
			ID     string `json:"id"`
			Paused bool   `json:"paused"`
		}
		if json.Unmarshal(b, &doc) == nil && !doc.Paused {
			out = append(out, strings.TrimPrefix(iter.Val(), n.cfg.SessionPrefix))
		}
	}
	return out
}

func (n *naiveInstance) tick(ctx context.Context) {
	ttl := n.cfg.Timing.LeaseTTL
	for _, ep := range n.targets(ctx) {
		n.mu.Lock()
		_, held := n.held[ep]
		n.mu.Unlock()
		if held {
			// The bug: renew whatever is there, and treat an error as "still fine".
			ok, err := n.cfg.Client.PExpire(ctx, n.key(ep), ttl).Result()
			switch {
			case err != nil && ctx.Err() == nil:
				n.log().Warn("naive: renew failed (ignored: still held)", "instance", n.cfg.ID, "endpoint", ep, "err", err)
			case err == nil && !ok:
				n.log().Info("naive: lease lost", "instance", n.cfg.ID, "endpoint", ep, "reason", "expired")
				n.drop(ep, "expired")
			}
			continue
		}
		ok, err := n.cfg.Client.SetNX(ctx, n.key(ep), n.cfg.ID, ttl).Result()
		switch {
		case err != nil && ctx.Err() == nil:
			n.log().Warn("naive: acquire failed", "instance", n.cfg.ID, "endpoint", ep, "err", err)
		case err == nil && ok:
			n.log().Info("naive: acquire ok", "instance", n.cfg.ID, "endpoint", ep, "reason", "acquired")
			n.hold(ctx, ep)
		}
	}
}

func (n *naiveInstance) hold(ctx context.Context, ep string) {
	pctx, cancel := context.WithCancel(ctx)
	n.mu.Lock()
	n.held[ep] = cancel
	n.mu.Unlock()
	if n.cfg.Observe != nil {
		n.cfg.Observe(ep, history.Belief{Held: true, Reason: "acquired"})
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for pctx.Err() == nil {
			_ = n.cfg.Poll(pctx, ep, 0)
			if !clock.Sleep(n.cfg.Clock, n.cfg.Timing.PollInterval, pctx.Done()) {
				return
			}
		}
	}()
}

func (n *naiveInstance) drop(ep, reason string) {
	n.mu.Lock()
	cancel, ok := n.held[ep]
	delete(n.held, ep)
	n.mu.Unlock()
	if ok {
		cancel()
		if n.cfg.Observe != nil {
			n.cfg.Observe(ep, history.Belief{Held: false, Reason: reason})
		}
	}
}

func (n *naiveInstance) Stop(ctx context.Context) error {
	n.mu.Lock()
	eps := make([]string, 0, len(n.held))
	for ep := range n.held {
		eps = append(eps, ep)
	}
	n.mu.Unlock()
	for _, ep := range eps {
		n.drop(ep, "released")
		_ = n.cfg.Client.Del(ctx, n.key(ep)).Err()
	}
	n.log().Info("naive: stopped", "instance", n.cfg.ID, "released", len(eps))
	if n.stop != nil {
		n.stop()
	}
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
