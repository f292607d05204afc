package election

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
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
// milliseconds as ARGV[2] and returns {1, term} or {0, holder}; renew and release take the term as
// ARGV[2] (renew the TTL as ARGV[3]) and return 1 or 0.
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

	_ struct{}
}

// RedisBackend runs elections on Redis. For role R and prefix P it uses:
//
//	P{R}:leader   holder's instance ID, SET NX semantics with PX TTL (via Lua, so it is idempotent)
//	P{R}:term     last term granted (no TTL): terms are Redis TIME µs, raised above the previous term
//	P{R}:epoch    end of the fresh-dataset grace (no TTL); its absence marks a new or lost dataset
//	P{R}:hb       heartbeat hash (optional)
//	P{R}:released pub/sub channel published on release
//
// Keys of one role share a hash slot, so the backend works on Redis Cluster.
//
// Fresh-dataset guard: when the epoch key is missing (first use of a role, or a Redis that restarted
// without its data), nobody is granted the role for one TTL, since a holder from before may still be
// inside its local deadline. The first election of a new role therefore takes one TTL.
//
// Clients should set ContextTimeoutEnabled so OpTimeout bounds socket reads; the elector does not rely on
// it for safety (its deadline does not wait for a pending reply), but a blocked call delays failover.
type RedisBackend struct {
	c      redis.UniversalClient
	prefix string
	hb     bool
}

// NewRedisBackend returns a backend on client. The client stays the caller's: Close does not close it.
func NewRedisBackend(client redis.UniversalClient, opts RedisOptions) *RedisBackend {
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "election:"
	}
	return &RedisBackend{c: client, prefix: opts.KeyPrefix, hb: opts.Heartbeat}
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
	res, err := acquireScript.Run(ctx, b.c, b.keys(role), id, ttl.Milliseconds(), flag(b.hb)).Slice()
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
	k := b.keys(role)
	n, err := renewScript.Run(ctx, b.c, []string{k[0], k[1], k[3]}, id, strconv.FormatUint(term, 10), ttl.Milliseconds(), flag(b.hb)).Int64()
	if err != nil {
		return fmt.Errorf("election: redis renew role %q: %w", role, errors.Join(err, ctx.Err()))
	}
	if n != 1 {
		return fmt.Errorf("%w: redis renew role %q term %d by %q", ErrNotHeld, role, term, id)
	}
	return nil
}

// Release implements Backend. It is idempotent: a retried release whose first attempt took effect
// succeeds, as long as nobody was granted the role in between.
func (b *RedisBackend) Release(ctx context.Context, role, id string, term uint64) error {
	k := b.keys(role)
	n, err := releaseScript.Run(ctx, b.c, []string{k[0], k[1], k[3]}, id, strconv.FormatUint(term, 10), b.Channel(role), role).Int64()
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
	var term *redis.StringCmd
	var at *redis.StringCmd
	_, err := b.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		id = p.Get(ctx, b.key(role, "leader"))
		pttl = p.PTTL(ctx, b.key(role, "leader"))
		term = p.Get(ctx, b.key(role, "term"))
		at = p.HGet(ctx, b.key(role, "hb"), "at_us")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return LeaderInfo{}, fmt.Errorf("election: redis leader of role %q: %w", role, errors.Join(err, ctx.Err()))
	}
	holder, err := id.Result()
	if errors.Is(err, redis.Nil) {
		return LeaderInfo{}, nil
	}
	info := LeaderInfo{ID: holder, TTL: max(pttl.Val(), 0)}
	info.Term, _ = strconv.ParseUint(term.Val(), 10, 64)
	if us, err := strconv.ParseInt(at.Val(), 10, 64); err == nil {
		info.Heartbeat = time.UnixMicro(us)
	}
	return info, nil
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
