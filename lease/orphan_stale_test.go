package lease

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// stuckLink is a go-redis hook that, while stuck, holds every command of its client until the caller
// gives up: a link whose replies stop coming (the commands are not sent).
type stuckLink struct {
	mu    sync.Mutex
	stuck bool
}

func (s *stuckLink) set(stuck bool) { s.mu.Lock(); s.stuck = stuck; s.mu.Unlock() }

func (s *stuckLink) wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		stuck := s.stuck
		s.mu.Unlock()
		if !stuck {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *stuckLink) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *stuckLink) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		if err := s.wait(ctx); err != nil {
			c.SetErr(err)
			return err
		}
		return next(ctx, c)
	}
}
func (s *stuckLink) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		if err := s.wait(ctx); err != nil {
			for _, c := range cs {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cs)
	}
}

// A stale value of ours in the key of an endpoint now assigned to another instance is released as soon
// as our link is back, announced, so the endpoint's owner takes it at once rather than when the value
// expires (explore seed 445301745: an instance whose renewal went unanswered through a Redis pause came
// back with ep-8 assigned elsewhere and left its stale value, extended by the late renewal, in the key;
// the owner, refused, waited for its expiry, and the endpoint went unpolled 2.9 s).
//
// a holds x alone; its link gets stuck, its renewal goes unanswered and its belief ends (fail closed),
// its value still the lease in Redis. b, which the assignment prefers for x, joins and is refused. When
// a's link is back, b must be granted x before a's value would have expired: impossible unless a
// released it (before, b took x only once the key expired).
func TestAStaleValueOfAnEndpointAssignedElsewhereIsReleased(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	rc := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(ctx, rc, "poll:"))
	cfg := testConfig()
	cfg.Targets = StaticTargets{"x"}
	b := ""
	for i := 0; b == ""; i++ {
		if id := fmt.Sprintf("b%d", i); Assign([]string{"a", id}, []string{"x"})["x"] == id {
			b = id
		}
	}
	f := newFleet(t, srv.Addr(), cfg)
	link := &stuckLink{}
	a := f.startAt("a", srv.Addr(), link)
	require.Eventually(t, func() bool { return len(a.Held()) == 1 && len(f.log.renewalsFor("x")) > 0 }, settle, 10*time.Millisecond)

	link.set(true)
	require.Eventually(t, func() bool { return len(a.Held()) == 0 }, 2*cfg.LeaseTTL, 10*time.Millisecond, "a's belief ends at its unanswered renewal")
	value, err := rc.Get(ctx, "poll:lease:x").Result()
	require.NoError(t, err, "a's value is still the lease")
	bm := f.start(b)
	require.Never(t, func() bool { return len(bm.Held()) > 0 }, 200*time.Millisecond, 10*time.Millisecond, "b is refused while a's value is the lease")

	pttl, err := rc.PTTL(ctx, "poll:lease:x").Result()
	require.NoError(t, err)
	expires := time.Now().Add(pttl)
	link.set(false)
	require.Eventually(t, func() bool { return len(bm.Held()) == 1 }, 2*cfg.LeaseTTL, 5*time.Millisecond)
	granted := time.Now()
	t.Logf("a's value %s had %v left when a's link came back; b was granted x %v before it would have expired", value, pttl, expires.Sub(granted))
	require.True(t, granted.Before(expires), "b was granted x only when a's stale value expired (%v after)", granted.Sub(expires))
}
