package lease

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// lostHeartbeat lets the first heartbeat write land in Redis and then reports it timed out, as a
// reply lost on a loaded link does, and logs the heartbeat key's writes and deletes in order.
type lostHeartbeat struct {
	key string

	mu   sync.Mutex
	lost bool
	log  []string
}

func (l *lostHeartbeat) note(cmds []redis.Cmder) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	hb := false
	for _, c := range cmds {
		if a := c.Args(); len(a) > 1 && fmt.Sprint(a[1]) == l.key {
			l.log = append(l.log, strings.ToLower(c.Name()))
			hb = hb || strings.EqualFold(c.Name(), "set")
		}
	}
	return hb
}

func (l *lostHeartbeat) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *lostHeartbeat) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error { l.note([]redis.Cmder{c}); return next(ctx, c) }
}
func (l *lostHeartbeat) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		hb := l.note(cmds)
		err := next(ctx, cmds)
		l.mu.Lock()
		defer l.mu.Unlock()
		if hb && !l.lost && err == nil {
			l.lost = true
			err = fmt.Errorf("heartbeat reply lost: %w", os.ErrDeadlineExceeded)
			for _, c := range cmds {
				c.SetErr(err)
			}
		}
		return err
	}
}

// A start attempt whose heartbeat write may have landed, but failed, takes the heartbeat back before
// it retries: the fleet assigns endpoints to every instance whose heartbeat it reads, and an instance
// that is not running would leave them unpolled until the heartbeat expired.
func TestFailedStartTakesItsHeartbeatBack(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := testConfig()
	cfg.InstanceID, cfg.Targets, cfg.Logger = "solo", StaticTargets{"x"}, quietLogger()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	hook := &lostHeartbeat{key: "poll:node:solo"}
	client := newClient(t, srv.Addr())
	client.AddHook(hook)
	m, err := New(client, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, m.Start(ctx), "the second attempt succeeds")
	defer func() { _ = m.Stop(context.Background()) }()
	hook.mu.Lock()
	defer hook.mu.Unlock()
	require.True(t, hook.lost)
	require.GreaterOrEqual(t, len(hook.log), 3, "%v", hook.log)
	require.Equal(t, []string{"set", "del", "set"}, hook.log[:3], "the failed attempt's heartbeat is deleted before the retry writes it")
}
