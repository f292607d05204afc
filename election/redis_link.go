package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The health of a RedisBackend's link to Redis.
//
// A call that ends without a reply from Redis (a timeout, a broken or refused connection) marks the
// link unhealthy: the request may have reached Redis and taken effect while the reply was lost, as under
// a one-way partition, so a further acquire or renewal would be blind. A blind renewal keeps the holding
// alive on Redis after the leader's own belief has ended, and a blind acquire may grant a holding nobody
// acts on; either keeps the standbys waiting a full TTL more. So while the link is unhealthy, TryAcquire
// and Renew first send PING (no side effect) under the caller's context (OpTimeout in the elector) and
// send nothing else unless it is answered: an unanswered probe fails the call with ErrLinkUnhealthy,
// which the elector treats like any failed call (a renewal ends the leadership, an acquire is tried
// again after RetryInterval on its clock). An answered probe makes the link healthy again and the call
// goes on. Release is still sent while unhealthy: it only deletes this instance's own holding with that
// term, so one that lands lets a standby in at once. Leader, a read, is also still sent.
//
// A call cut short because its caller cancelled it (a crash or stop of one elector) says nothing about
// the link and does not count. Calls already past their probe when the link fails may still land: at
// most one OpTimeout of them.

// linkFailure reports whether err means that no reply came back from Redis. A Redis error reply
// (including redis.Nil) is a reply and does not count.
func linkFailure(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	var reply redis.Error
	return !errors.As(err, &reply)
}

// LinkHealthy reports whether the backend sends acquires and renewals: false from a call that got no
// reply until a probe is answered.
func (b *RedisBackend) LinkHealthy() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.unhealthy
}

// LinkFailures returns how many times the link has turned unhealthy.
func (b *RedisBackend) LinkFailures() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures
}

// noteErr marks the link unhealthy when err, returned by the call op under ctx, means no reply came back
// and the caller did not cancel the call itself.
func (b *RedisBackend) noteErr(ctx context.Context, op, role string, err error) {
	if !linkFailure(err) || errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	b.mu.Lock()
	was := b.unhealthy
	if !was {
		b.unhealthy = true
		b.failures++
	}
	b.mu.Unlock()
	if !was {
		b.log.Warn("election: redis link unhealthy: no acquire or renewal until a probe is answered",
			"op", op, "role", role, "err", err)
	}
}

// ready returns nil when an acquire or renewal may be sent: at once while the link is healthy, else
// once a PING sent under ctx has been answered.
func (b *RedisBackend) ready(ctx context.Context, op, role string) error {
	if b.LinkHealthy() {
		return nil
	}
	if err := b.c.Ping(ctx).Err(); err != nil {
		b.log.Debug("election: redis link probe failed", "op", op, "role", role, "err", err)
		return fmt.Errorf("election: redis %s role %q: %w: probe: %w", op, role, ErrLinkUnhealthy, errors.Join(err, ctx.Err()))
	}
	b.mu.Lock()
	was := b.unhealthy
	b.unhealthy = false
	b.mu.Unlock()
	if was {
		b.log.Info("election: redis link healthy again", "op", op, "role", role)
	}
	return nil
}
