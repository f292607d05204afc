package lease

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// pipelineCounter counts the pipelines that carry at least one call of a script, by its SHA1.
type pipelineCounter struct {
	sha string
	n   atomic.Int64
}

func (c *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (c *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (c *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if a := cmd.Args(); len(a) > 1 && strings.EqualFold(fmt.Sprint(a[0]), "evalsha") && a[1] == c.sha {
				c.n.Add(1)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// A pass over more endpoints than one round trip carries sends them in consecutive round trips, of
// acquireBatch for an acquire pass and acquireChunk for a renewal pass; every endpoint is acquired
// and renewed.
func TestPassesSendChunks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	client := newClient(t, srv.Addr())
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, client, "poll:"))
	n := 2*acquireChunk + acquireChunk/2
	eps := make(StaticTargets, n)
	for i := range eps {
		eps[i] = fmt.Sprintf("ep-%04d", i)
	}
	acq, ren := &pipelineCounter{sha: acquireScript.Hash()}, &pipelineCounter{sha: renewScript.Hash()}
	client.AddHook(acq)
	client.AddHook(ren)
	cfg := testConfig()
	cfg.RenewInterval, cfg.DiscoveryInterval = 1500*time.Millisecond, time.Minute // few passes
	cfg.InstanceID, cfg.Targets, cfg.Logger = "solo", eps, quietLogger()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	var renewed atomic.Int64
	cfg.Observe = func(e Event) {
		if e.Kind == EventRenewed {
			renewed.Add(1)
		}
	}
	m, err := New(client, cfg)
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	defer func() { _ = m.Stop(ctx) }()
	require.Eventually(t, func() bool { return len(m.Held()) == n }, settle, 5*time.Millisecond)
	require.Equal(t, int64((n+acquireBatch-1)/acquireBatch), acq.n.Load(), "%d endpoints in round trips of %d", n, acquireBatch)

	before := ren.n.Load()
	m.renewPass()
	require.Equal(t, int64(3), ren.n.Load()-before, "one renewal pass, in round trips of %d", acquireChunk)
	require.GreaterOrEqual(t, renewed.Load(), int64(n), "every lease renewed")
	require.Len(t, m.Held(), n)
}
