package lease

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fleet registry: a sorted set <prefix>nodes of instance IDs, scored with when each one's last
// heartbeat was written (Unix milliseconds on the writer's clock, plus HeartbeatTTL). Each heartbeat
// writes its node key and its registry entry in one round trip; discovery reads the registry instead
// of scanning the keyspace for node keys. A SCAN walks every key in the database (each lease and fence
// key included), so with 100 instances over 100,000 endpoints every discovery round cost Redis about
// 90 ms, and the fleet's rounds together most of its time. The registry costs a read of a few hundred
// entries.
//
// The registry only names candidates: whether an instance is alive is still its node key (discovery
// reads the PTTL of each candidate's heartbeat, and a key that is gone, after a Stop or an expiry,
// drops the candidate). So a stopped instance needs no registry clean-up, and an entry that outlives its
// instance costs one PTTL per round until it is pruned: entries whose score is older than
// registryPrune on the reader's clock are removed as discovery reads them. Scores come from the
// instances' clocks, so the pruning age is far above any clock offset between instances.

// registryPrune is how long after its last heartbeat's expiry an entry is removed from the registry.
const registryPrune = time.Hour

// heartbeatCmds queues the heartbeat: the node key with its TTL and the registry entry.
func (m *Manager) heartbeatCmds(ctx context.Context, p redis.Pipeliner) *redis.StatusCmd {
	set := p.Set(ctx, m.keys.node(m.id), "1", m.cfg.HeartbeatTTL)
	p.ZAdd(ctx, m.keys.nodes(), redis.Z{Score: float64(m.clock.Now().Add(m.cfg.HeartbeatTTL).UnixMilli()), Member: m.id})
	return set
}

// registered returns the instances in the fleet registry (whether or not their node keys still exist)
// with the expiry each one's writer gave its last heartbeat (its score), pruning entries older than
// registryPrune.
func (m *Manager) registered(ctx context.Context) ([]string, []time.Time, error) {
	p := m.client.Pipeline()
	cutoff := m.clock.Now().Add(-registryPrune).UnixMilli()
	p.ZRemRangeByScore(ctx, m.keys.nodes(), "-inf", "("+strconv.FormatInt(cutoff, 10))
	entries := p.ZRangeWithScores(ctx, m.keys.nodes(), 0, -1)
	if _, err := p.Exec(ctx); err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(entries.Val()))
	expiries := make([]time.Time, len(entries.Val()))
	for i, z := range entries.Val() {
		ids[i], _ = z.Member.(string)
		expiries[i] = time.UnixMilli(int64(z.Score))
	}
	return ids, expiries, nil
}
