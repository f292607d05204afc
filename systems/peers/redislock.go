// Package peers wires the lock libraries Go teams pick off the shelf into the harness, the way their
// READMEs show, so that `simrun matrix` can compare them with Tenure's reference. Each instance runs with
// a seeded ±20 % jitter on its refresh interval, as real deployments do. Only the wiring is ours; what
// the library does is the library's.
//
//   - redislock (github.com/bsm/redislock): a lock per endpoint, taken with Obtain(key, TTL) (no retry),
//     kept with Refresh(key, TTL) every RenewInterval, given back with Release; an instance that finds
//     an endpoint unlocked takes it (no balancing). A failed Refresh ends the holding (the README's
//     pattern stops on any error). There is no local deadline and no fencing token: the library offers
//     neither, and the README does not add one.
package peers

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bsm/redislock"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func init() { sim.Register("redislock", func() sim.System { return RedisLock{} }) }

// RedisLock is github.com/bsm/redislock as a lease system.
type RedisLock struct{}

// Name implements sim.System.
func (RedisLock) Name() string { return "redislock" }

// The library's scripts, as it sends them (they are not exported). TestRedisLockScripts checks that the
// library in go.mod still sends exactly these; if a new version changes them, that test fails rather
// than the model going quiet.
var (
	redislockObtain = `
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end

local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
`
	redislockRefresh = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`
	redislockRelease = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

	redislockScripts = map[string]string{sha(redislockObtain): "obtain", sha(redislockRefresh): "refresh", sha(redislockRelease): "release"}
)

func sha(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// Classify implements sim.OpClassifier for the library's obtain, refresh and release scripts.
func (RedisLock) Classify(args []any, reply any, err error) (history.Op, bool) {
	if len(args) < 5 {
		return history.Op{}, false
	}
	body := fmt.Sprint(args[1])
	var kind string
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "evalsha":
		kind = redislockScripts[strings.ToLower(body)]
	case "eval":
		kind = redislockScripts[sha(body)]
	}
	nkeys, convErr := strconv.Atoi(fmt.Sprint(args[2]))
	if kind == "" || convErr != nil || nkeys != 1 {
		return history.Op{}, false
	}
	argv := args[4:]
	op := history.Op{Key: fmt.Sprint(args[3]), Owner: fmt.Sprint(argv[0])}
	ms := func(v any) time.Duration {
		n, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		return time.Duration(n) * time.Millisecond
	}
	n, _ := reply.(int64)
	switch kind {
	case "obtain":
		if len(argv) < 3 {
			return history.Op{}, false
		}
		// SET NX PX, or SET PX again when the key already holds this token: the model's acquire, which
		// succeeds for the owner in place.
		op.Kind, op.TTL, op.OK = history.OpAcquire, ms(argv[2]), err == nil && reply == "OK"
	case "refresh":
		if len(argv) < 2 {
			return history.Op{}, false
		}
		op.Kind, op.TTL, op.OK = history.OpRenew, ms(argv[1]), err == nil && n == 1
	case "release":
		op.Kind, op.OK = history.OpRelease, err == nil && n == 1
	}
	return op, true
}

// NewInstance implements sim.System.
func (RedisLock) NewInstance(cfg sim.InstanceConfig) (sim.Instance, error) {
	return &redisLockInstance{cfg: cfg, rng: rand.New(rand.NewSource(cfg.Seed)), locker: redislock.New(cfg.Client),
		held: map[string]*heldLock{}}, nil
}

type heldLock struct {
	lock   *redislock.Lock
	cancel context.CancelFunc
	done   chan struct{}
}

type redisLockInstance struct {
	cfg    sim.InstanceConfig
	locker *redislock.Client

	rmu sync.Mutex
	rng *rand.Rand

	mu       sync.Mutex
	held     map[string]*heldLock
	obtained int // obtain attempts, for tokens (discover runs on one goroutine)
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// jittered is d times a factor drawn from [0.8, 1.2].
func (r *redisLockInstance) jittered(d time.Duration) time.Duration {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return time.Duration(float64(d) * (0.8 + 0.4*r.rng.Float64()))
}

func (r *redisLockInstance) key(ep string) string { return r.cfg.KeyPrefix + "lease:" + ep }

func (r *redisLockInstance) Start(ctx context.Context) error {
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

// discover tries to obtain every target it does not hold and lets go of those that are gone.
func (r *redisLockInstance) discover(ctx context.Context) {
	targets, ok := r.targets(ctx)
	if !ok {
		return
	}
	live := map[string]bool{}
	for _, ep := range targets {
		live[ep] = true
		r.mu.Lock()
		_, held := r.held[ep]
		r.mu.Unlock()
		if held {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.OpTimeout)
		// The token only has to be unique; drawing it from the instance's ID and a counter instead of the
		// library's crypto/rand keeps every run reproducible from its seed; "<instance>:" tells the checker whose holding it names.
		r.obtained++
		lock, err := r.locker.Obtain(cctx, r.key(ep), r.cfg.Timing.LeaseTTL, &redislock.Options{Token: fmt.Sprintf("%s:%d", r.cfg.ID, r.obtained)})
		cancel()
		if err == nil {
			r.hold(ctx, ep, lock)
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

func (r *redisLockInstance) targets(ctx context.Context) ([]string, bool) {
	cctx, cancel := context.WithTimeout(ctx, 2*r.cfg.Timing.OpTimeout)
	defer cancel()
	var out []string
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
			out = append(out, strings.TrimPrefix(iter.Val(), r.cfg.SessionPrefix))
		}
	}
	return out, iter.Err() == nil
}

// hold starts polling ep and refreshing its lock; a failed refresh ends both.
func (r *redisLockInstance) hold(ctx context.Context, ep string, lock *redislock.Lock) {
	hctx, cancel := context.WithCancel(ctx)
	h := &heldLock{lock: lock, cancel: cancel, done: make(chan struct{})}
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
			err := lock.Refresh(cctx, r.cfg.Timing.LeaseTTL, nil)
			ccancel()
			if err != nil && hctx.Err() == nil {
				reason := "refresh-failed"
				if errors.Is(err, redislock.ErrNotObtained) {
					reason = "lost"
				}
				r.drop(ep, reason)
				return
			}
		}
	}()
}

func (r *redisLockInstance) observe(ep string, b history.Belief) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(ep, b)
	}
}

// drop ends the holding of ep (no release) and reports it.
func (r *redisLockInstance) drop(ep, reason string) *heldLock {
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

// release ends the holding, waits for its poll in flight, then releases the lock.
func (r *redisLockInstance) release(ctx context.Context, ep string) {
	h := r.drop(ep, "released")
	if h == nil {
		return
	}
	<-h.done
	cctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.OpTimeout)
	defer cancel()
	_ = h.lock.Release(cctx)
}

func (r *redisLockInstance) Stop(ctx context.Context) error {
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
