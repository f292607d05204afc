package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Waiting for replicas (Config.WaitReplicas). A batch of grants or renewals ends with WAIT n t on the
// same pipeline, hence the same connection: WAIT blocks until every write that connection sent before
// it is acknowledged by n replicas, or t milliseconds have passed, and answers how many acknowledged.
// Fewer than n and every grant or renewal of the batch that wrote fails with ErrNotReplicated, exactly
// as if its reply had been lost: a renewal ends the belief at once (fail closed), a grant is never
// believed and its holding value is released before the next attempt. t is half of what is left of
// the call's OpTimeout, so WAIT answers within the call's bound and leaves the reply time to arrive.
//
// What this does and does not buy. A belief then rests on a write that n replicas had received when
// the reply left the primary, so a failover that promotes one of them keeps it, and a kill -9 of the
// primary right after a grant no longer loses it to a replica that had it in flight. It does not make
// Redis consistent: replicas acknowledge receipt, not durability (a replica restarted without
// persistence forgets); a failover may still promote a replica that did not acknowledge (with n
// smaller than the number of replicas, or one that lagged before the write); a primary cut off from
// its sentinels but not from clients keeps acknowledging with its replicas while another primary is
// elected, and replicas that follow the new primary no longer acknowledge the old one, so WAIT then
// fails, but only after the failover has already begun. The fresh-dataset guard still treats every
// promotion as a restart, WAIT or not. A write that WAIT does not confirm may still have been applied
// and replicated: failing closed costs liveness, never safety.
//
// WAIT counts one connection's writes, and a Redis Cluster pipeline spans one connection per shard,
// so WaitReplicas is refused on a ClusterClient.

// checkWaitClient is New's refusal of WaitReplicas on a cluster client.
func checkWaitClient(client redis.UniversalClient, cfg Config) error {
	if cfg.WaitReplicas <= 0 {
		return nil
	}
	if _, ok := client.(*redis.ClusterClient); ok {
		return invalid("WaitReplicas", "(%d) needs a client of one primary (redis.Client, or a FailoverClient for Sentinel): WAIT counts one connection's writes, and a ClusterClient pipeline spans one connection per shard", cfg.WaitReplicas)
	}
	return nil
}

// withWait marks a grant or renewal call to be confirmed by WAIT.
func (m *Manager) withWait(sc *scriptCall) *scriptCall {
	sc.wait = m.cfg.WaitReplicas
	return sc
}

// queueWait appends WAIT to p when a call of batch asks for it, and returns its command (nil if none).
func queueWait(ctx context.Context, p redis.Pipeliner, batch []*scriptCall) *redis.IntCmd {
	n := 0
	for _, sc := range batch {
		n = max(n, sc.wait)
	}
	if n == 0 {
		return nil
	}
	timeout := 100 * time.Millisecond
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d) / 2
	}
	// WAIT's timeout 0 blocks for ever: never send it.
	// Built by hand: go-redis's Wait sets the command's read timeout to WAIT's own, too short for a
	// reply that comes after the batch's scripts; the call's context bounds it instead.
	cmd := redis.NewIntCmd(ctx, "wait", n, max(timeout.Milliseconds(), 1))
	_ = p.Process(ctx, cmd)
	return cmd
}

// settleWait fails a call that wrote (a grant or a renewal that took effect) when WAIT did not report
// it on sc.wait replicas.
func settleWait(sc *scriptCall, wait *redis.IntCmd) {
	if sc.wait <= 0 || sc.err != nil || sc.res <= 0 {
		return
	}
	if wait == nil {
		sc.err = ErrNotReplicated
		return
	}
	acked, err := wait.Result()
	switch {
	case err != nil:
		sc.err = fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
	case acked < int64(sc.wait):
		sc.err = fmt.Errorf("%w: %d of %d replicas", ErrNotReplicated, acked, sc.wait)
	}
}
