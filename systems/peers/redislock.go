package peers

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bsm/redislock"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func init() { sim.Register("redislock", func() sim.System { return RedisLock{} }) }

// RedisLock is github.com/bsm/redislock as a lease system.
type RedisLock struct{}

// Name implements sim.System.
func (RedisLock) Name() string { return "redislock" }

// Description implements sim.Describer.
func (RedisLock) Description() string {
	return "peer: github.com/bsm/redislock, one lock per endpoint, as its README shows"
}

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
	return newMember(cfg, redisLockLibrary{redislock.New(cfg.Client), cfg.Timing.LeaseTTL}), nil
}

// redisLockLibrary takes a lock with Obtain (no retry), keeps it with Refresh, gives it back with Release.
type redisLockLibrary struct {
	client *redislock.Client
	ttl    time.Duration
}

func (l redisLockLibrary) obtain(ctx context.Context, key, value string) (heldLock, error) {
	lock, err := l.client.Obtain(ctx, key, l.ttl, &redislock.Options{Token: value})
	if err != nil {
		return nil, err
	}
	return redisLockHeld{lock, l.ttl}, nil
}

type redisLockHeld struct {
	lock *redislock.Lock
	ttl  time.Duration
}

func (h redisLockHeld) refresh(ctx context.Context) string {
	err := h.lock.Refresh(ctx, h.ttl, nil)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, redislock.ErrNotObtained):
		return "lost"
	}
	return "refresh-failed"
}

func (h redisLockHeld) release(ctx context.Context) { _ = h.lock.Release(ctx) }
