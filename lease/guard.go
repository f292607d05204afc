package lease

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Acquiring at the end of the fresh-dataset guard. While the guard is in force the acquire script
// refuses every grant (-1). An acquire pass that was refused reads when the guard ends (the epoch key
// holds its end in Redis microseconds; TIME gives Redis's present, in the same round trip), remembers
// that moment on the manager's clock and arms the takeover alarm for it. Until then acquire passes send
// nothing, so a fleet that starts on a fresh dataset loads Redis with one refused batch per instance,
// not one per pass, and every instance acquires a round trip after the guard's end instead of at its
// next RenewInterval tick.
//
// The moment is counted from the reply, which comes after Redis read TIME, so a clock that keeps
// Redis's rate fires at or after the guard's end. A local clock faster than Redis's fires early: the
// attempt is refused and the end read again. A slower one fires late by at most DriftBound times the
// guard's remaining length. Nothing here can make a grant happen: the script decides, as always.
//
// In the cluster layout every endpoint has its own epoch key, on the shard that serves the endpoint,
// so guards start and end apart (a promoted shard re-arms only its own endpoints' guards). The pass
// then goes on past a refusal, nothing is held back by a manager-wide guardUntil, and the refused
// endpoints' remaining guard is read from their epoch keys (guard_left.lua: the end and the shard's
// TIME in one call on that shard); the alarm is armed for the earliest end, and endpoints still
// guarded then are refused and read again.
//
// A per-endpoint epoch key expires, so that endpoints that are gone leave nothing behind, but never
// while a lease it guards can be live: an endpoint held for longer than its epoch's TTL would lose it
// while held, and its next grant (a graceful stop's handoff, a rebalance) would arm the guard and leave
// it unpolled for one LeaseTTL instead of milliseconds. A grant sets the epoch's TTL to epochTTL; the
// holder then sets it again with the first renewal sent epochTTL/2 or more after the last call that
// set it was sent (its grant, or an earlier refresh whose reply came), a PEXPIRE in the renewal's
// round trip. The holder renews every RenewInterval, so while its renewals are answered the epoch is
// set again within RenewInterval of epochTTL/2, far inside epochTTL (at least 100*LeaseTTL); a
// holder whose renewals go unanswered loses the lease at once, and the epoch outlives it. The refresh
// is a command of its own rather than part of the renew script: during a slot migration the lease and
// epoch keys can sit on two nodes for a while, and a script naming both is refused (TRYAGAIN) until
// the move ends, which would fail renewals closed; a one-key PEXPIRE follows the ASK redirect like
// the renewal. PEXPIRE does nothing to a missing key: only a grant arms a guard.

// acquireArgs are the acquire script's arguments for a new holding value.
func (m *Manager) acquireArgs(value string) []any {
	args := []any{value, ttlMillis(m.cfg.LeaseTTL), ttlMillis(m.cfg.fenceTTL())}
	if m.keys.cluster {
		args = append(args, ttlMillis(m.epochTTL)) // per-endpoint epoch keys expire (see above)
	}
	return args
}

// epochRefreshDueLocked reports whether h's next renewal carries a refresh of its endpoint's epoch
// TTL (cluster layout). m.mu must be held.
func (m *Manager) epochRefreshDueLocked(h *holding, now time.Time) bool {
	return m.keys.cluster && now.Sub(h.epochAt) >= m.epochTTL/2
}

// epochRefreshCall sets the TTL of endpoint's epoch key to epochTTL again, if the key exists.
func (m *Manager) epochRefreshCall(endpoint string) *scriptCall {
	key, keep := m.keys.epoch(endpoint), m.epochTTL
	return &scriptCall{keys: []string{key}, plain: func(ctx context.Context, p redis.Pipeliner) func() (int64, error) {
		c := p.PExpire(ctx, key, keep)
		return func() (int64, error) { ok, err := c.Result(); return b2i(ok), err }
	}}
}

// settleEpochRefreshes notes the refreshes that were answered (calls[i] refreshed hs[i]'s epoch):
// the next is due epochTTL/2 after each was sent. One that found no key is not sent again either.
func (m *Manager) settleEpochRefreshes(hs []*holding, calls []*scriptCall) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, sc := range calls {
		if sc.err == nil {
			hs[i].epochAt = sc.sent
		}
	}
}

// scheduleGuardEnd reads when the fresh-dataset guard of the refused endpoints ends and arms the
// takeover alarm for then. Errors are counted on the link and otherwise ignored: the periodic acquire
// pass still retries.
func (m *Manager) scheduleGuardEnd(refused []string) {
	m.scanRegistryUntil(m.clock.Now().Add(m.cfg.LeaseTTL + m.cfg.DiscoveryInterval))
	if m.keys.cluster {
		m.scheduleEndpointGuards(refused)
		return
	}
	octx, cancel := m.opCtx()
	defer cancel()
	p := m.client.Pipeline()
	epoch := p.Get(octx, m.keys.epoch(""))
	now := p.Time(octx)
	_, err := p.Exec(octx)
	replied := m.clock.Now()
	if err != nil {
		if m.runCtx.Err() == nil {
			m.noteErr("acquire", err)
		}
		return
	}
	left, ok := guardLeft(epoch.Val(), now.Val())
	if !ok {
		return // no epoch yet, or one written by something else: retry on the next pass
	}
	until := replied.Add(left)
	m.mu.Lock()
	m.guardUntil = until
	m.mu.Unlock()
	m.takeover.arm(until.Add(takeoverSlack))
}

// scanRegistryUntil has every discovery round read the fleet registry until t (see fleet). A refusal
// by the fresh-dataset guard calls it, for as long as the guard can last and one round more: the
// dataset was lost (or is new), and the registry with it. The instances that outlived the loss write
// their heartbeats and registry entries again one by one, within a HeartbeatInterval and a call bound
// of the backend's return, and most announce nothing (only those whose link failed rejoin); an
// instance that read the registry before they did, one that started just after the loss, would find
// them only at its periodic rescan, and the endpoints its assignment leaves to them would go unpolled
// meanwhile. The guard lasts a LeaseTTL from the first grant attempt after the return: the rounds it
// scans see every survivor before the first grants.
func (m *Manager) scanRegistryUntil(t time.Time) {
	m.disc.mu.Lock()
	if t.After(m.disc.scanUntil) {
		m.disc.scanUntil = t
	}
	m.disc.mu.Unlock()
}

// scheduleEndpointGuards arms the takeover alarm for the earliest end among the guards of the
// refused endpoints (cluster layout), read in one pipelined round trip.
func (m *Manager) scheduleEndpointGuards(refused []string) {
	calls := make([]*scriptCall, len(refused))
	for i, ep := range refused {
		calls[i] = &scriptCall{script: guardLeftScript, keys: []string{m.keys.epoch(ep)}}
	}
	octx, cancel := m.opCtx()
	runBatch(octx, m.client, m.clock.Now, calls)
	cancel()
	var (
		first time.Duration
		found bool
		err   error
	)
	for _, sc := range calls {
		switch {
		case sc.err != nil:
			err = sc.err
		case sc.res >= 0 && (!found || time.Duration(sc.res)*time.Microsecond < first):
			first, found = time.Duration(sc.res)*time.Microsecond, true
		}
	}
	if err != nil && m.runCtx.Err() == nil {
		m.noteErr("acquire", err)
	}
	if found {
		m.takeover.arm(calls[0].replied.Add(first + takeoverSlack))
	}
}

// MarkEstablishedEndpoints is MarkEstablished for the cluster layout (Config.KeyLayout), where every
// endpoint has its own epoch key: it creates the epoch key of each of endpoints that lacks one, bound
// to the run of the server that serves it. The same caution applies: call it only when no holder from
// an earlier dataset can still be running.
func MarkEstablishedEndpoints(ctx context.Context, client redis.UniversalClient, keyPrefix string, endpoints []string) error {
	k := newKeys(keyPrefix, LayoutCluster)
	// The epoch keys expire as the acquire script leaves them, with the default fence TTL (a Config
	// with a longer LeaseTTL refreshes them to its own at each grant).
	keep := ttlMillis(DefaultConfig().fenceTTL())
	p := client.Pipeline()
	for _, ep := range endpoints {
		establishScript.Eval(ctx, p, []string{k.epoch(ep)}, keep)
	}
	_, err := p.Exec(ctx)
	return err
}

// guardLeft returns how long the guard recorded in epoch ("<end in Redis microseconds> <run_id>") lasts
// after the Redis time now; zero when it has ended. ok is false when epoch cannot be read.
func guardLeft(epoch string, now time.Time) (time.Duration, bool) {
	f := strings.Fields(epoch)
	if len(f) == 0 {
		return 0, false
	}
	end, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, false
	}
	return max(time.Duration(end-now.UnixMicro())*time.Microsecond, 0), true
}
