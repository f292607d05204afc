package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func init() {
	sim.Register("redsync", func() sim.System { return RedSync{} })
	sim.Register("redsync-setnx-extend", func() sim.System { return RedSync{SetNXOnExtend: true} })
}

// RedSync is github.com/go-redsync/redsync/v4 on one Redis, as a lease system: a mutex per endpoint,
// taken with TryLockContext (one try, WithExpiry(TTL)), extended with ExtendContext every
// RenewInterval, given back with UnlockContext; an instance that finds an endpoint unlocked takes it
// (no balancing). A failed extension ends the holding. The library computes a validity time (Until)
// with its drift factor, but the README's pattern does not consult it, and neither does this wiring.
// SetNXOnExtend selects WithSetNXOnExtend (system redsync-setnx-extend): an extension that finds the key
// gone sets it again.
type RedSync struct {
	SetNXOnExtend bool
}

// Name implements sim.System.
func (r RedSync) Name() string {
	if r.SetNXOnExtend {
		return "redsync-setnx-extend"
	}
	return "redsync"
}

// The library's scripts carry their SHA1 in its source; TestRedSyncScripts checks them against what
// the version in go.mod sends.
var redsyncScripts = map[string]string{
	"d75bb8b5bd13532ddedd17762e772346e39b321e": "touch",
	"b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79": "touch-setnx",
	"e950836ed1e694540c503ef9972b8de518044d3b": "delete",
}

// Classify implements sim.OpClassifier for the extend and unlock scripts; the lock itself is a plain
// SET NX PX, which the harness models as it is.
func (RedSync) Classify(args []any, reply any, err error) (history.Op, bool) {
	if len(args) < 5 {
		return history.Op{}, false
	}
	var kind string
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "evalsha":
		kind = redsyncScripts[strings.ToLower(fmt.Sprint(args[1]))]
	case "eval":
		kind = redsyncScripts[sha(fmt.Sprint(args[1]))]
	}
	if kind == "" || fmt.Sprint(args[2]) != "1" {
		return history.Op{}, false
	}
	argv := args[4:]
	op := history.Op{Key: fmt.Sprint(args[3]), Owner: fmt.Sprint(argv[0])}
	n, _ := reply.(int64)
	switch kind {
	case "touch", "touch-setnx":
		if len(argv) < 2 {
			return history.Op{}, false
		}
		ms, _ := strconv.ParseInt(fmt.Sprint(argv[1]), 10, 64)
		op.Kind, op.TTL, op.OK = history.OpRenew, time.Duration(ms)*time.Millisecond, err == nil && n != 0
		if kind == "touch-setnx" {
			// Extends the key when it holds the value, sets it when it is gone: an acquire in the model.
			op.Kind = history.OpAcquire
		}
	case "delete":
		// 1 deleted, -1 already gone, 0 held by another.
		op.Kind, op.OK, op.AbsentOK = history.OpRelease, err == nil && (n == 1 || n == -1), true
	}
	return op, true
}

// NewInstance implements sim.System.
func (r RedSync) NewInstance(cfg sim.InstanceConfig) (sim.Instance, error) {
	in := &redsyncInstance{cfg: cfg, sys: r, rng: rand.New(rand.NewSource(cfg.Seed)), held: map[string]*heldMutex{}}
	in.rs = redsync.New(goredis.NewPool(cfg.Client))
	return in, nil
}

type heldMutex struct {
	mutex  *redsync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

type redsyncInstance struct {
	cfg sim.InstanceConfig
	sys RedSync
	rs  *redsync.Redsync

	rmu sync.Mutex
	rng *rand.Rand

	mu     sync.Mutex
	held   map[string]*heldMutex
	values int // lock values handed out, for seeded values
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

func (r *redsyncInstance) jittered(d time.Duration) time.Duration {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return time.Duration(float64(d) * (0.8 + 0.4*r.rng.Float64()))
}

func (r *redsyncInstance) key(ep string) string { return r.cfg.KeyPrefix + "lease:" + ep }

func (r *redsyncInstance) Start(ctx context.Context) error {
	ctx, r.stop = context.WithCancel(ctx)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for ctx.Err() == nil {
			r.discover(ctx)
			if !clock.Sleep(r.cfg.Clock, r.jittered(r.cfg.Timing.DiscoveryInterval), ctx.Done()) {
				return
			}
		}
	}()
	return nil
}

func (r *redsyncInstance) discover(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 2*r.cfg.Timing.OpTimeout)
	var targets []string
	iter := r.cfg.Client.Scan(cctx, 0, r.cfg.SessionPrefix+"*", 1000).Iterator()
	for iter.Next(cctx) {
		b, err := r.cfg.Client.Get(cctx, iter.Val()).Bytes()
		if err != nil {
			continue
		}
		var doc struct {
			Paused bool `json:"paused"`
		}
		if json.Unmarshal(b, &doc) == nil && !doc.Paused {
			targets = append(targets, strings.TrimPrefix(iter.Val(), r.cfg.SessionPrefix))
		}
	}
	scanErr := iter.Err()
	cancel()
	if scanErr != nil {
		return
	}
	live := map[string]bool{}
	for _, ep := range targets {
		live[ep] = true
		r.mu.Lock()
		_, held := r.held[ep]
		r.values++
		value := fmt.Sprintf("%s:%d", r.cfg.ID, r.values)
		r.mu.Unlock()
		if held {
			continue
		}
		opts := []redsync.Option{redsync.WithExpiry(r.cfg.Timing.LeaseTTL), redsync.WithTries(1),
			redsync.WithGenValueFunc(func() (string, error) { return value, nil })}
		if r.sys.SetNXOnExtend {
			opts = append(opts, redsync.WithSetNXOnExtend())
		}
		m := r.rs.NewMutex(r.key(ep), opts...)
		lctx, lcancel := context.WithTimeout(ctx, r.cfg.Timing.OpTimeout)
		err := m.TryLockContext(lctx)
		lcancel()
		if err == nil {
			r.hold(ctx, ep, m)
		}
	}
	r.mu.Lock()
	var gone []string
	for ep := range r.held {
		if !live[ep] {
			gone = append(gone, ep)
		}
	}
	r.mu.Unlock()
	for _, ep := range gone {
		r.release(ctx, ep)
	}
}

func (r *redsyncInstance) hold(ctx context.Context, ep string, m *redsync.Mutex) {
	hctx, cancel := context.WithCancel(ctx)
	h := &heldMutex{mutex: m, cancel: cancel, done: make(chan struct{})}
	r.mu.Lock()
	r.held[ep] = h
	r.mu.Unlock()
	r.observe(ep, history.Belief{Held: true, Reason: history.ReasonAcquired})
	var pollers sync.WaitGroup
	pollers.Add(1)
	go func() {
		defer pollers.Done()
		for hctx.Err() == nil {
			_ = r.cfg.Poll(hctx, ep, 0)
			if !clock.Sleep(r.cfg.Clock, r.cfg.Timing.PollInterval, hctx.Done()) {
				return
			}
		}
	}()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(h.done)
		defer pollers.Wait()
		for clock.Sleep(r.cfg.Clock, r.jittered(r.cfg.Timing.RenewInterval), hctx.Done()) {
			cctx, ccancel := context.WithTimeout(hctx, r.cfg.Timing.OpTimeout)
			ok, err := m.ExtendContext(cctx)
			ccancel()
			if (err != nil || !ok) && hctx.Err() == nil {
				r.drop(ep, "extend-failed")
				return
			}
		}
	}()
}

func (r *redsyncInstance) observe(ep string, b history.Belief) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(ep, b)
	}
}

func (r *redsyncInstance) drop(ep, reason string) *heldMutex {
	r.mu.Lock()
	h := r.held[ep]
	delete(r.held, ep)
	r.mu.Unlock()
	if h != nil {
		h.cancel()
		r.observe(ep, history.Belief{Held: false, Reason: reason})
	}
	return h
}

func (r *redsyncInstance) release(ctx context.Context, ep string) {
	h := r.drop(ep, "released")
	if h == nil {
		return
	}
	<-h.done
	cctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.OpTimeout)
	defer cancel()
	_, _ = h.mutex.UnlockContext(cctx)
}

func (r *redsyncInstance) Stop(ctx context.Context) error {
	if r.stop == nil {
		return nil
	}
	r.mu.Lock()
	eps := make([]string, 0, len(r.held))
	for ep := range r.held {
		eps = append(eps, ep)
	}
	r.mu.Unlock()
	for _, ep := range eps {
		r.release(ctx, ep)
	}
	r.stop()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
