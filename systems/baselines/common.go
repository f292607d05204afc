package baselines

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

// jitter draws refresh intervals with a seeded ±20 % spread, one stream per instance.
type jitter struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newJitter(seed int64) *jitter { return &jitter{rng: rand.New(rand.NewSource(seed))} }

// around returns d scaled by a factor drawn uniformly from [0.8, 1.2].
func (j *jitter) around(d time.Duration) time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	return time.Duration(float64(d) * (0.8 + 0.4*j.rng.Float64()))
}

// upTo returns a duration drawn uniformly from [0, d).
func (j *jitter) upTo(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return time.Duration(j.rng.Int63n(int64(d)))
}

// actor acts on one target (an endpoint, a role) every poll interval while it is believed held and not
// paused, with token 0: none of the baselines has a fencing token. Beliefs are reported as they change.
type actor struct {
	cfg    sim.InstanceConfig
	target string

	mu     sync.Mutex
	held   bool
	paused bool
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newActor(cfg sim.InstanceConfig, target string) *actor { return &actor{cfg: cfg, target: target} }

func (a *actor) holds() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}

// begin reports the belief and starts acting. No deadline is reported: these designs have none.
func (a *actor) begin(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held {
		return
	}
	a.held, a.paused = true, false
	if a.cfg.Observe != nil {
		a.cfg.Observe(a.target, history.Belief{Held: true, Reason: history.ReasonAcquired})
	}
	actx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for actx.Err() == nil {
			a.mu.Lock()
			paused := a.paused
			a.mu.Unlock()
			if !paused {
				_ = a.cfg.Poll(actx, a.target, 0)
			}
			if !clock.Sleep(a.cfg.Clock, a.cfg.Timing.PollInterval, actx.Done()) {
				return
			}
		}
	}()
}

// pause stops or resumes acting while the belief stays.
func (a *actor) pause(p bool) {
	a.mu.Lock()
	a.paused = p
	a.mu.Unlock()
}

// end stops acting and reports the belief's end.
func (a *actor) end(reason string) {
	a.mu.Lock()
	if !a.held {
		a.mu.Unlock()
		return
	}
	a.held = false
	a.cancel()
	if a.cfg.Observe != nil {
		a.cfg.Observe(a.target, history.Belief{Held: false, Reason: reason})
	}
	a.mu.Unlock()
}

// wait returns when the acting goroutine has exited.
func (a *actor) wait() { a.wg.Wait() }

// script is a Lua script of a baseline with its meaning in the lease model.
type script struct {
	src  string
	sha  string
	kind history.OpKind
	// ttlArg is the index in ARGV of the TTL in milliseconds, or -1.
	ttlArg int
}

func newScript(src string, kind history.OpKind, ttlArg int) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:]), kind: kind, ttlArg: ttlArg}
}

// classifyScripts models EVAL/EVALSHA of the given compare-the-value scripts: KEYS[1] is the lease
// key, ARGV[1] the owner, and a reply of 1 is success.
func classifyScripts(scripts []script, args []any, reply any, err error) (history.Op, bool) {
	if len(args) < 5 {
		return history.Op{}, false
	}
	name := strings.ToLower(fmt.Sprint(args[0]))
	body := fmt.Sprint(args[1])
	var sc *script
	for i := range scripts {
		if (name == "evalsha" && strings.EqualFold(body, scripts[i].sha)) || (name == "eval" && body == scripts[i].src) {
			sc = &scripts[i]
		}
	}
	if sc == nil {
		return history.Op{}, false
	}
	nkeys, convErr := strconv.Atoi(fmt.Sprint(args[2]))
	if convErr != nil || nkeys < 1 || len(args) < 3+nkeys+1 {
		return history.Op{}, false
	}
	argv := args[3+nkeys:]
	op := history.Op{Kind: sc.kind, Key: fmt.Sprint(args[3]), Owner: fmt.Sprint(argv[0])}
	if sc.ttlArg >= 0 && sc.ttlArg < len(argv) {
		ms, _ := strconv.ParseInt(fmt.Sprint(argv[sc.ttlArg]), 10, 64)
		op.TTL = time.Duration(ms) * time.Millisecond
	}
	n, _ := reply.(int64)
	op.OK = err == nil && n == 1
	return op, true
}

// Compare-the-value scripts shared by the Redis baselines: renew extends the key only while it holds
// ARGV[1], release deletes it only then.
var (
	renewScript = newScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`,
		history.OpRenew, 1)
	releaseScript = newScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`,
		history.OpRelease, -1)
)

// sleepOn waits d on the instance's clock; false when ctx ended first.
func sleepOn(c clock.Clock, ctx context.Context, d time.Duration) bool {
	return clock.Sleep(c, d, ctx.Done())
}
