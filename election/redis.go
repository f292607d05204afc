package election

import (
	"context"
	crand "crypto/rand"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(acquireLua)
	//go:embed scripts/renew.lua
	renewLua    string
	renewScript = redis.NewScript(renewLua)
	//go:embed scripts/release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)
)

// ScriptNames maps the SHA1 of each Lua script of the Redis backend to its name ("acquire", "renew",
// "release"), for tools that classify recorded EVALSHA commands. The argument conventions are in the
// header of each script: KEYS[1] is the leader key, ARGV[1] the instance ID; acquire takes the TTL in
// milliseconds as ARGV[2] and the attempt nonce as ARGV[4], and returns {1, term} or {0, holder};
// renew and release take the term as ARGV[2] (renew the TTL as ARGV[3]) and return 1 or 0.
func ScriptNames() map[string]string {
	return map[string]string{
		acquireScript.Hash(): "acquire",
		renewScript.Hash():   "renew",
		releaseScript.Hash(): "release",
	}
}

// Scripts returns the Lua source of each script by name, for tools that see EVAL (sent after a NOSCRIPT
// reply, as on first use against a fresh server).
func Scripts() map[string]string {
	return map[string]string{"acquire": acquireLua, "renew": renewLua, "release": releaseLua}
}

// RedisOptions configure a RedisBackend. The zero value is usable.
type RedisOptions struct {
	// KeyPrefix namespaces every key and channel. Default "election:".
	KeyPrefix string
	// Heartbeat also writes a heartbeat hash (id, term, at_us = Redis TIME in µs) with the holding's TTL
	// on every acquire and renewal, for operators and dashboards. Default off.
	Heartbeat bool
	// KeyTTL is how long a role's term and epoch keys outlive its last acquire or renewal, so roles that
	// are no longer used leave nothing behind. It is raised to twice the holding TTL when shorter. The
	// first election after a role was idle that long waits one TTL (the fresh-dataset guard). Default 24h.
	KeyTTL time.Duration
	// Logger receives the link health changes (see LinkHealthy). Default: discard.
	Logger *slog.Logger

	_ struct{}
}

// RedisBackend runs elections on Redis. For role R and prefix P it uses:
//
//	P{R}:leader   the holding, "<term>:<nonce>:<instance>", PX the holding's TTL
//	P{R}:term     last term granted, PX KeyTTL: a floor, terms being Redis TIME µs raised above it
//	P{R}:epoch    "<run_id> <end of the fresh-dataset grace, µs>", PX KeyTTL
//	P{R}:hb       heartbeat hash (optional), PX the holding's TTL
//	P{R}:released pub/sub channel published on release
//
// Keys of one role share a hash slot, so the backend works on Redis Cluster. Every key expires: the
// holding after its TTL, the term and epoch keys KeyTTL after the role's last acquire or renewal.
//
// Holding identity. Each TryAcquire call draws a nonce, sent with every re-send of that call, so a
// re-sent acquire whose first attempt took effect gets its holding back, while a new attempt by the
// same instance (RunOnce with a fixed instance ID, a restarted process) is refused as long as an earlier
// holding is on the key. Renew and release compare the instance and the term, which is unique per
// holding: a late or re-sent release of an earlier holding never deletes a later one. The nonce comes
// from crypto/rand, never from a seeded source: two processes run with the same seed and the same
// instance ID must still draw different nonces.
//
// Fresh-dataset guard: nobody is granted the role for one TTL when the epoch key is missing (first use
// of a role, FLUSHALL, a restart without persistence, KeyTTL of disuse) or was written by another run of
// the server (see the package doc: a restart that loaded an older snapshot), since a holder from before
// may still be inside its local deadline. The first election of a new role therefore takes one TTL.
//
// Clients should set ContextTimeoutEnabled so OpTimeout bounds socket reads; the elector does not rely on
// it for safety (its deadline does not wait for a pending reply), but a blocked call delays failover.
type RedisBackend struct {
	c      redis.UniversalClient
	prefix string
	hb     bool
	keep   time.Duration

	log *slog.Logger

	nonceBase uint64        // random per backend
	nonces    atomic.Uint64 // attempts so far

	mu        sync.Mutex
	unhealthy bool   // a call got no reply and no probe has been answered since (see redis_link.go)
	failures  uint64 // transitions to unhealthy
}

// NewRedisBackend returns a backend on client. The client stays the caller's: Close does not close it.
func NewRedisBackend(client redis.UniversalClient, opts RedisOptions) *RedisBackend {
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "election:"
	}
	if opts.KeyTTL <= 0 {
		opts.KeyTTL = 24 * time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var seed [8]byte
	_, _ = crand.Read(seed[:]) // never fails on supported platforms
	return &RedisBackend{c: client, prefix: opts.KeyPrefix, hb: opts.Heartbeat, keep: opts.KeyTTL, log: opts.Logger,
		nonceBase: binary.LittleEndian.Uint64(seed[:])}
}

// nonce returns a new attempt nonce: the backend's random base and a counter, so attempts of one
// backend never collide and those of different backends collide with negligible probability.
func (b *RedisBackend) nonce() string {
	return fmt.Sprintf("%016x%08x", b.nonceBase, b.nonces.Add(1))
}

// keepMs is the term and epoch keys' TTL in milliseconds for holdings of ttl.
func (b *RedisBackend) keepMs(ttl time.Duration) int64 { return max(b.keep, 2*ttl).Milliseconds() }

// parseHolding splits a leader key value "<term>:<nonce>:<instance>".
func parseHolding(v string) (id string, term uint64, ok bool) {
	ts, rest, ok1 := strings.Cut(v, ":")
	_, id, ok2 := strings.Cut(rest, ":")
	t, err := strconv.ParseUint(ts, 10, 64)
	if !ok1 || !ok2 || err != nil {
		return v, 0, false
	}
	return id, t, true
}

func (b *RedisBackend) key(role, what string) string { return b.prefix + "{" + role + "}:" + what }

func (b *RedisBackend) keys(role string) []string {
	return []string{b.key(role, "leader"), b.key(role, "term"), b.key(role, "epoch"), b.key(role, "hb")}
}

// Channel returns the pub/sub channel published when role is released.
func (b *RedisBackend) Channel(role string) string { return b.key(role, "released") }

func flag(on bool) string {
	if on {
		return "1"
	}
	return "0"
}

// TryAcquire implements Backend.
func (b *RedisBackend) TryAcquire(ctx context.Context, role, id string, ttl time.Duration) (uint64, bool, error) {
	return b.tryAcquire(ctx, role, id, ttl, b.nonce())
}

// tryAcquire is one acquire attempt with its nonce; go-redis re-sends it unchanged after a lost reply.
func (b *RedisBackend) tryAcquire(ctx context.Context, role, id string, ttl time.Duration, nonce string) (uint64, bool, error) {
	if err := b.ready(ctx, "acquire", role); err != nil {
		return 0, false, err
	}
	res, err := acquireScript.Run(ctx, b.c, b.keys(role), id, ttl.Milliseconds(), flag(b.hb), nonce, b.keepMs(ttl)).Slice()
	b.noteErr(ctx, "acquire", role, err)
	if err != nil {
		return 0, false, fmt.Errorf("election: redis acquire role %q: %w", role, errors.Join(err, ctx.Err()))
	}
	if len(res) != 2 {
		return 0, false, fmt.Errorf("election: redis acquire role %q: unexpected reply %v", role, res)
	}
	if n, _ := res[0].(int64); n != 1 {
		return 0, false, nil
	}
	s, _ := res[1].(string)
	term, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("election: redis acquire role %q: bad term %q: %w", role, s, err)
	}
	return term, true, nil
}

// Renew implements Backend.
func (b *RedisBackend) Renew(ctx context.Context, role, id string, term uint64, ttl time.Duration) error {
	if err := b.ready(ctx, "renew", role); err != nil {
		return err
	}
	k := b.keys(role)
	n, err := renewScript.Run(ctx, b.c, k, id, strconv.FormatUint(term, 10), ttl.Milliseconds(), flag(b.hb), b.keepMs(ttl)).Int64()
	b.noteErr(ctx, "renew", role, err)
	if err != nil {
		return fmt.Errorf("election: redis renew role %q: %w", role, errors.Join(err, ctx.Err()))
	}
	if n != 1 {
		return fmt.Errorf("%w: redis renew role %q term %d by %q", ErrNotHeld, role, term, id)
	}
	return nil
}

// Release implements Backend. It deletes the holding only if it is id's with term, so a late or re-sent
// release never deletes a later holding. A re-sent release whose first attempt took effect succeeds,
// as long as no later grant is known.
//
// It is sent even while the link is unhealthy, and always as EVAL with the script's source: a release
// is rare, and one whose reply will be lost must not depend on the script being in the server's cache
// (EVALSHA would be refused with NOSCRIPT, a reply nobody sees, and the holding would live a full TTL).
func (b *RedisBackend) Release(ctx context.Context, role, id string, term uint64) error {
	k := b.keys(role)
	n, err := releaseScript.Eval(ctx, b.c, []string{k[0], k[1], k[3]}, id, strconv.FormatUint(term, 10), b.Channel(role), role).Int64()
	b.noteErr(ctx, "release", role, err)
	if err != nil {
		return fmt.Errorf("election: redis release role %q: %w", role, errors.Join(err, ctx.Err()))
	}
	if n != 1 {
		return fmt.Errorf("%w: redis release role %q term %d by %q", ErrNotHeld, role, term, id)
	}
	return nil
}

// Leader implements Backend.
func (b *RedisBackend) Leader(ctx context.Context, role string) (LeaderInfo, error) {
	var id *redis.StringCmd
	var pttl *redis.DurationCmd
	var at, epoch *redis.StringCmd
	var now *redis.TimeCmd
	_, err := b.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		id = p.Get(ctx, b.key(role, "leader"))
		pttl = p.PTTL(ctx, b.key(role, "leader"))
		at = p.HGet(ctx, b.key(role, "hb"), "at_us")
		epoch = p.Get(ctx, b.key(role, "epoch"))
		now = p.Time(ctx)
		return nil
	})
	b.noteErr(ctx, "leader", role, err)
	if err != nil && !errors.Is(err, redis.Nil) {
		return LeaderInfo{}, fmt.Errorf("election: redis leader of role %q: %w", role, errors.Join(err, ctx.Err()))
	}
	v, err := id.Result()
	if errors.Is(err, redis.Nil) {
		return LeaderInfo{Guard: guardLeft(epoch.Val(), now.Val())}, nil
	}
	holder, term, _ := parseHolding(v)
	info := LeaderInfo{ID: holder, Term: term, TTL: leaderTTL(pttl.Val())}
	if us, err := strconv.ParseInt(at.Val(), 10, 64); err == nil {
		info.Heartbeat = time.UnixMicro(us)
	}
	return info, nil
}

// leaderTTL turns a leader key's PTTL reply, as go-redis hands it over, into LeaderInfo.TTL. A key in
// its last millisecond reads as PTTL 0: that is a holding about to end (1ms), not one without a TTL
// (zero), or a standby whose attempt arrived a moment early would wait a whole RetryInterval instead
// of trying again at the expiry.
func leaderTTL(pttl time.Duration) time.Duration {
	switch {
	case pttl < 0: // -1: no TTL; -2: gone (go-redis passes both on unscaled)
		return 0
	case pttl < time.Millisecond:
		return time.Millisecond
	}
	return pttl
}

// guardLeft is what remains of the fresh-dataset grace recorded in an epoch key value ("<run_id> <end,
// Redis TIME µs>") at the server time now: zero when the value is missing or malformed or the grace is
// over. It does not compare the run_id: an acquire that finds another run's epoch rewrites it first, so
// a candidate reads the new grace after its refused attempt.
func guardLeft(epoch string, now time.Time) time.Duration {
	_, end, ok := strings.Cut(epoch, " ")
	us, err := strconv.ParseInt(end, 10, 64)
	if !ok || err != nil || now.IsZero() {
		return 0
	}
	return max(time.UnixMicro(us).Sub(now), 0)
}

// Subscribe implements Notifier with Redis pub/sub on Channel(role). go-redis re-subscribes after a
// reconnect; hints published while disconnected are lost, and RetryInterval covers them.
func (b *RedisBackend) Subscribe(ctx context.Context, role string) (<-chan struct{}, error) {
	ps := b.c.Subscribe(ctx, b.Channel(role))
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("election: redis subscribe role %q: %w", role, errors.Join(err, ctx.Err()))
	}
	out := make(chan struct{}, 1)
	msgs := ps.Channel()
	go func() {
		defer close(out)
		defer ps.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-msgs:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}

// Close implements Backend. The client is the caller's and stays open.
func (b *RedisBackend) Close() error { return nil }
