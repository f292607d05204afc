package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

func (m *Manager) acquireCall(endpoint, value string) *scriptCall {
	return m.withWait(&scriptCall{
		script: m.acquireWith(),
		keys:   []string{m.keys.lease(endpoint), m.keys.fence(endpoint), m.keys.epoch(endpoint)},
		args:   m.acquireArgs(value),
	})
}

func (m *Manager) renewCall(endpoint, value string) *scriptCall {
	if sc := m.renewOverride(endpoint); sc != nil {
		return sc
	}
	return m.withWait(&scriptCall{
		script: renewScript,
		keys:   []string{m.keys.lease(endpoint)},
		args:   []any{value, ttlMillis(m.cfg.LeaseTTL)},
	})
}

// releaseCall deletes the lease if it holds value; announce publishes the release to the fleet.
func (m *Manager) releaseCall(endpoint, value string, announce bool) *scriptCall {
	channel, msg := "", ""
	if announce {
		channel, msg = m.keys.channel(), "release "+m.id+" "+endpoint
	}
	if sc := m.releaseOverride(endpoint, channel, msg); sc != nil {
		return sc
	}
	return &scriptCall{
		script: releaseScript,
		keys:   []string{m.keys.lease(endpoint)},
		args:   []any{value, ttlMillis(m.cfg.LeaseTTL), channel, msg},
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// acquireChunk is how many endpoints one renewal (or release) round trip carries; acquireBatch is
// the acquire passes' own. A pass over more sends several round trips, one after another: each is
// bounded by OpTimeout on its own, its confirmations count from its own send time, and its grants are
// polled as soon as it returns; a fleet that acquires at the same moment (the end of the fresh-dataset
// guard) has its round trips interleaved by Redis rather than each instance's whole pass queued behind
// the others'.
const acquireChunk = 256

// acquireBatch is how many endpoints one round trip of an acquire pass carries: fewer than a renewal
// round trip, because a whole fleet acquires at the same moment at the end of the fresh-dataset guard,
// and Redis runs every acquire script of a round before it answers the round's last pipeline. With
// 100 instances acquiring 100 endpoints each in one round trip, the last replies came 200-360 ms
// after their requests (scale-100x10k: p50 174-218 ms, p90 201-361 ms) against a 300 ms call bound,
// and the round trips that overran failed, marked their links unhealthy and set off churn. In round
// trips of 32, a round of the fleet is a third as long, and renewals sent meanwhile wait behind one
// round, not the whole burst. Passes of a few endpoints (a takeover, a handoff) are one round trip
// either way.
const acquireBatch = 32

// acquirePass hands off held endpoints this instance is no longer preferred for (and cancels the
// handoff of those preferred again), and tries to acquire every preferred endpoint that is free here,
// acquireBatch endpoints per pipelined round trip. Each attempt gets a new holding value; an earlier
// value of ours that may still be in Redis is released first, in the same pipeline.
func (m *Manager) acquirePass() {
	m.acquireMu.Lock()
	defer m.acquireMu.Unlock()

	m.mu.Lock()
	if m.state != stateRunning || m.unhealthy {
		m.mu.Unlock()
		return
	}
	for ep, s := range m.slots {
		h := s.h
		if s.state != epHeld || h == nil || h.ended {
			continue
		}
		switch {
		case !m.assigned[ep] && h.handoff == "":
			h.handoff = ReasonHandoff
			if !m.targetSet[ep] {
				h.handoff = ReasonTargetRemoved
			}
			m.handoffOverride(s, h)
			h.signal()
		case m.assigned[ep] && h.handoff != "":
			h.handoff = "" // assigned back before the handoff took effect: keep it
		}
	}
	// A stale value has expired in Redis after one TTL (staleFor): forget it, so the slots of
	// endpoints that went elsewhere do not pile up.
	m.pruneStaleLocked()
	// Stale values of endpoints assigned elsewhere: their owner is refused until they expire unless we
	// release them, announced, so that it takes the endpoint at once.
	var orphans []staleRelease
	var orphanEps []string
	for ep, s := range m.slots {
		if s.state != epFree || m.assigned[ep] {
			continue
		}
		for _, sv := range s.stale {
			orphans = append(orphans, staleRelease{value: sv.value, call: m.releaseCall(ep, sv.value, true)})
			orphanEps = append(orphanEps, ep)
		}
	}
	var want []string
	var next time.Time // the first expiry of a lease left out below
	// While the fresh-dataset guard is known to refuse every grant, sending acquires would only load
	// Redis: the takeover alarm is armed for the guard's end (guard.go), again here in case it fired
	// earlier for another lease.
	guardUntil := m.guardUntil
	if now := m.clock.Now(); !now.Before(guardUntil) {
		for ep := range m.assigned {
			if s := m.slots[ep]; s == nil || s.state == epFree {
				if until, ok := m.refusedUntil[ep]; ok {
					if now.Before(until) {
						if next.IsZero() || until.Before(next) {
							next = until
						}
						continue // held by another until then
					}
					delete(m.refusedUntil, ep)
				}
				want = append(want, ep)
			}
		}
	}
	m.mu.Unlock()
	if len(orphans) > 0 {
		m.releaseOrphans(orphanEps, orphans)
	}
	if !next.IsZero() {
		m.takeover.arm(next) // the alarm fires once: it may have been for an earlier lease
	}
	if len(want) == 0 {
		if m.clock.Now().Before(guardUntil) {
			m.takeover.arm(guardUntil.Add(takeoverSlack))
		}
		return
	}
	slices.Sort(want)

	var refused []string // held by another holding: try again when that lease expires
	var guarded []string // refused by the fresh-dataset guard: try again when it ends
	defer func() {
		if len(guarded) > 0 {
			m.scheduleGuardEnd(guarded)
		}
		m.scheduleTakeover(refused)
	}()
	for lo := 0; lo < len(want); lo += acquireBatch {
		if !m.acquireSome(want[lo:min(lo+acquireBatch, len(want))], &refused, &guarded) {
			return
		}
	}
}

// releaseOrphans sends, in one round trip, the releases of stale values of endpoints assigned to other
// instances (rels[i] of eps[i]) and forgets each one answered: deleted, or not the lease. One that goes
// unanswered stays, to be sent again at a later pass.
func (m *Manager) releaseOrphans(eps []string, rels []staleRelease) {
	skip := m.onDownNodes(eps) // per-primary link health: nothing goes to a primary marked down
	var keep []string
	var kept []staleRelease
	for i, ep := range eps {
		if !skip[ep] {
			keep, kept = append(keep, ep), append(kept, rels[i])
		}
	}
	eps, rels = keep, kept
	calls := make([]*scriptCall, len(rels))
	for i, r := range rels {
		calls[i] = r.call
	}
	octx, cancel := m.opCtx()
	runGroups(octx, m.client, m.clock.Now, calls, func(idx []int) {
		group := make([]*scriptCall, len(idx))
		for j, k := range idx {
			group[j] = calls[k]
		}
		m.noteBatch("release", group)
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, k := range idx {
			s := m.slots[eps[k]]
			if s == nil || calls[k].err != nil {
				continue
			}
			s.forgetStale(rels[k].value)
			if s.state == epFree && len(s.stale) == 0 {
				delete(m.slots, eps[k])
			}
		}
	})
	cancel()
}

// acquireSome sends one round trip of acquires for those of eps that are still preferred and free here
// and settles the replies, adding the endpoints held by others to refused and those refused by the
// fresh-dataset guard to guarded. It reports whether the pass may go on (running, link healthy).
func (m *Manager) acquireSome(eps []string, refused *[]string, guarded *[]string) bool {
	skip := m.onDownNodes(eps) // per-primary link health: nothing goes to a primary marked down
	m.mu.Lock()
	if m.state != stateRunning || m.unhealthy {
		m.mu.Unlock()
		return false
	}
	var want []string
	var calls, acq []*scriptCall
	var stale [][]staleRelease // stale[i]: the releases sent before acq[i]
	for _, ep := range eps {
		if s := m.slots[ep]; !m.assigned[ep] || (s != nil && s.state != epFree) || skip[ep] {
			continue // assigned elsewhere, acquired or released since the pass began, or its primary is down
		}
		s := m.slotLocked(ep)
		var rels []staleRelease
		for _, sv := range s.stale {
			st := m.releaseCall(ep, sv.value, false)
			calls = append(calls, st)
			rels = append(rels, staleRelease{value: sv.value, call: st})
		}
		s.state, s.value = epAcquiring, m.newValueLocked()
		want = append(want, ep)
		acq = append(acq, m.acquireCall(ep, s.value))
		stale = append(stale, rels)
	}
	m.mu.Unlock()
	if len(want) == 0 {
		return true
	}
	// which[k] is the index in acq of calls[k], -1 for a release of a stale value. Every release goes
	// before every acquire, so each endpoint's stale values are released before its new value is set.
	which := make([]int, len(calls), len(calls)+len(acq))
	for k := range which {
		which[k] = -1
	}
	for i := range acq {
		which = append(which, i)
	}
	calls = append(calls, acq...)
	octx, cancel := m.opCtx()
	// On Redis Cluster each shard's replies are settled as soon as they are in (runGroups).
	runGroups(octx, m.client, m.clock.Now, calls, func(idx []int) {
		group := make([]*scriptCall, len(idx))
		for j, k := range idx {
			group[j] = calls[k]
		}
		m.noteBatch("acquire", group)
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.state == stateDone {
			return // crashed: believe nothing (crash recorded the values in flight)
		}
		for _, k := range idx {
			if i := which[k]; i >= 0 {
				m.settleAcquireLocked(want[i], acq[i], stale[i], refused, guarded)
			}
		}
	})
	cancel()

	m.mu.Lock()
	defer m.mu.Unlock()
	// One epoch guards every endpoint in the single layout, so its refusal ends the pass; in the
	// cluster layout each endpoint has its own.
	return m.state == stateRunning && !m.unhealthy && (len(*guarded) == 0 || m.keys.cluster)
}

// settleAcquireLocked applies the reply of sc, the acquire of ep (rels: the releases of its stale
// values sent before it). Called with m.mu held.
func (m *Manager) settleAcquireLocked(ep string, sc *scriptCall, rels []staleRelease, refused *[]string, guarded *[]string) {
	s := m.slots[ep]
	if s == nil || s.state != epAcquiring {
		return
	}
	for _, r := range rels {
		if r.call.err == nil {
			s.forgetStale(r.value) // answered: deleted, or not the lease
		}
	}
	switch {
	case sc.err != nil:
		// The acquire may have landed: its value is stale until released or expired, as are those
		// whose releases went unanswered.
		m.metrics.acquireFailed("error")
		m.log.Warn("lease: acquire failed", "instance", m.id, "endpoint", ep, "token", 0, "err", sc.err)
		m.freeLocked(ep, s.value)
	case sc.res == 0:
		m.metrics.acquireFailed("held")
		m.log.Debug("lease: acquire failed: held by another instance", "instance", m.id, "endpoint", ep, "token", 0)
		m.freeLocked(ep, "")
		*refused = append(*refused, ep)
	case sc.res < 0:
		m.metrics.acquireFailed("guard")
		m.log.Debug("lease: acquire refused: fresh-dataset guard", "instance", m.id, "endpoint", ep, "token", 0)
		m.noteGuardLocked()
		m.freeLocked(ep, "")
		*guarded = append(*guarded, ep)
	case m.state == stateStopping:
		// Granted while Stop began: it is ours in Redis, so Stop must release it. The grant found none
		// of the stale values in Redis.
		s.state, s.stale = epReleasing, nil
		m.stopRelease = append(m.stopRelease, &holding{endpoint: ep, value: s.value, token: uint64(sc.res)})
	default:
		deadline, ok := m.confirm(time.Time{}, sc)
		if !ok {
			m.metrics.acquireFailed("error")
			m.log.Warn("lease: acquire reply came after its validity ended", "instance", m.id, "endpoint", ep, "token", sc.res)
			s.stale = nil // granted: the lease held none of them
			m.freeLocked(ep, s.value)
			return
		}
		m.startHoldingLocked(s, ep, uint64(sc.res), deadline)
		s.h.epochAt = sc.sent // the grant set the epoch key's TTL
		delete(m.refusedUntil, ep)
		if at, ok := m.notified[ep]; ok {
			m.metrics.handoffSeconds(m.clock.Now().Sub(at).Seconds())
			delete(m.notified, ep)
		}
	}
}

// renewPass renews every held lease, acquireChunk per pipelined round trip. A lease that is confirmed
// gets a new deadline counted from the send time of its round trip; one that is gone is lost; one whose
// renewal errs or times out stops being polled at once (fail closed) and may be re-acquired on a later
// pass. Nothing is sent while the link is unhealthy: the leases then run out at their local deadlines,
// and in Redis.
func (m *Manager) renewPass() {
	m.mu.Lock()
	if m.state == stateDone || m.unhealthy {
		m.mu.Unlock()
		return
	}
	hs := make([]*holding, 0, len(m.slots))
	for _, s := range m.slots {
		if s.state == epHeld && s.h != nil && !s.h.ended {
			hs = append(hs, s.h)
		}
	}
	m.mu.Unlock()
	if len(hs) == 0 {
		return
	}
	if m.renewPassOverride(hs) {
		return
	}
	for lo := 0; lo < len(hs); lo += acquireChunk {
		part := hs[lo:min(lo+acquireChunk, len(hs))]
		m.mu.Lock()
		if lo > 0 && (m.state == stateDone || m.unhealthy) {
			m.mu.Unlock()
			return
		}
		var send []*holding
		refresh := map[*holding]bool{}
		now := m.clock.Now()
		for _, h := range part {
			if !h.ended {
				send = append(send, h)
				if m.epochRefreshDueLocked(h, now) {
					refresh[h] = true
				}
			}
		}
		m.mu.Unlock()
		if m.cc != nil {
			if skip := m.onDownNodes(endpointsOf(send)); len(skip) > 0 {
				// Per-primary link health: a lease whose primary is down runs out at its local deadline.
				send = slices.DeleteFunc(send, func(h *holding) bool { return skip[h.endpoint] })
			}
		}
		calls := make([]*scriptCall, len(send), len(send)+len(refresh))
		for i, h := range send {
			calls[i] = m.renewCall(h.endpoint, h.value)
		}
		var refreshed []*holding // refreshed[k] is the holding of calls[len(send)+k]
		for _, h := range send {
			if refresh[h] {
				calls = append(calls, m.epochRefreshCall(h.endpoint))
				refreshed = append(refreshed, h)
			}
		}
		octx, cancel := m.opCtx()
		// On Redis Cluster each shard's renewals are settled as soon as its replies are in (runGroups).
		runGroups(octx, m.client, m.clock.Now, calls, func(idx []int) {
			var hs, rhs []*holding
			var group, renewals, refreshes []*scriptCall
			for _, k := range idx {
				group = append(group, calls[k])
				if k < len(send) {
					hs, renewals = append(hs, send[k]), append(renewals, calls[k])
				} else {
					rhs, refreshes = append(rhs, refreshed[k-len(send)]), append(refreshes, calls[k])
				}
			}
			m.noteBatch("renew", group)
			m.settleRenewals(hs, renewals)
			m.settleEpochRefreshes(rhs, refreshes)
		})
		cancel()
	}
}

// endpointsOf lists the endpoints of hs.
func endpointsOf(hs []*holding) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.endpoint
	}
	return out
}

// settleRenewals applies the replies of one renewal round trip: calls[i] renewed hs[i].
func (m *Manager) settleRenewals(hs []*holding, calls []*scriptCall) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == stateDone {
		return
	}
	ended := false
	for i, sc := range calls {
		h := hs[i]
		switch {
		case h.ended:
		case sc.err != nil && m.timeoutConfirms(sc.err):
			m.extendLocked(h, sc)
		case sc.err != nil:
			m.metrics.renewFailed()
			m.log.Warn("lease: renew failed", "instance", m.id, "endpoint", h.endpoint, "token", h.token, "err", sc.err)
			if !m.failsClosed() {
				continue
			}
			ended = m.endLocked(h, EventLost, ReasonRenewFailed, ErrRenewFailed, epFree, true) || ended
		case sc.res == 1:
			m.extendLocked(h, sc)
		case !m.lostEndsBelief():
			m.log.Warn("lease: renewal refused, belief kept", "instance", m.id, "endpoint", h.endpoint, "token", h.token)
		default:
			ended = m.endLocked(h, EventLost, ReasonLost, ErrLost, epFree, false) || ended
		}
	}
	if ended {
		m.kick(m.acquireKick) // try to get them back
	}
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err)
}

// discover reads the live instances and the targets and recomputes this instance's assignment. On an
// error the previous view is kept. It does nothing while the link is unhealthy (the probe runs it on
// recovery).
func (m *Manager) discover() { m.discoverRound(false) }

// discoverRound is discover; due makes it a round of the takeover schedule (see refresh).
func (m *Manager) discoverRound(due bool) {
	if !m.linkHealthy() {
		return
	}
	if err := m.refreshRound(due); err != nil && m.runCtx.Err() == nil {
		m.log.Warn("lease: discovery failed", "instance", m.id, "err", err)
	}
}

// refresh is one discovery round: it only reads. When it changes the assignment it kicks an acquire
// pass (an unchanged one leaves nothing new to acquire: the periodic pass, release notifications,
// lost leases and the takeover schedule see to the rest).
func (m *Manager) refresh() error { return m.refreshRound(false) }

// refreshRound is refresh. A round of the takeover schedule (due), run when the first known heartbeat
// is due to expire, reads only the heartbeats due by now (see fleet) and keeps the targets of the last
// assignment: every instance of a fleet runs it at the same moment when a dead instance's heartbeat
// expires, so its cost is on the takeover's path, and a heartbeat's expiry does not change the targets.
func (m *Manager) refreshRound(due bool) error {
	ctx, cancel := m.opCtxFor(m.cfg.DiscoveryInterval)
	defer cancel()
	others, wake, err := m.fleet(ctx, due) // discovery.go
	if err != nil {
		m.noteErr("discovery", err)
		return fmt.Errorf("instances: %w", err)
	}
	var targets []string
	if due {
		m.mu.Lock()
		targets = m.lastAssign.targets
		m.mu.Unlock()
	}
	if targets == nil {
		read := m.targets.Targets
		if ss, ok := m.targets.(*SessionSource); ok {
			read = ss.shared // read-only here and in ownShare: no copy needed
		}
		if targets, err = read(ctx); err != nil {
			return fmt.Errorf("targets: %w", err) // a TargetSource may not use this link: not counted
		}
	}
	// The next round comes when the first other heartbeat expires, so that a dead instance's
	// endpoints are reassigned at that moment rather than at the next tick (see takeover.go).
	if wake.IsZero() {
		m.fleetWake.set(time.Time{})
		m.prepareWake.set(time.Time{})
	} else {
		m.fleetWake.set(wake.Add(takeoverSlack))
		m.prepareWake.set(wake.Add(-prepareLead))
	}
	// We are alive even if our heartbeat was lost with a restarted Redis.
	insts := dedupe(append(others, m.id))
	// The same fleet and the same targets give the same assignment: most rounds find nothing new.
	var assigned, targetSet map[string]bool
	m.mu.Lock()
	same := m.lastAssign.same(insts, targets)
	m.mu.Unlock()
	if !same {
		m.shareMu.Lock()
		m.share.update(targets)
		targetSet = m.share.set
		assigned = m.assignedHere(insts, targets)
		m.shareMu.Unlock()
	}

	m.mu.Lock()
	m.instances = insts
	if assigned != nil {
		m.targetSet, m.assigned = targetSet, assigned
		m.lastAssign = assignment{insts: insts, targets: targets}
	}
	cutoff := m.clock.Now().Add(-m.cfg.LeaseTTL)
	for ep, at := range m.notified {
		if at.Before(cutoff) {
			delete(m.notified, ep)
		}
	}
	now := m.clock.Now()
	for ep, until := range m.refusedUntil {
		if !now.Before(until) || !m.assigned[ep] {
			delete(m.refusedUntil, ep)
		}
	}
	m.mu.Unlock()
	if !same {
		m.kick(m.acquireKick)
	}
	return nil
}

func (m *Manager) opCtxFor(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.runCtx, max(d, m.cfg.OpTimeout))
}

// heartbeat writes the node key and the fleet registry entry (scale_fleet.go) in one round trip.
//
// On Redis Cluster (per-primary link health) the node key and the registry entry may live on two
// shards: they are sent one after the other, and only the node key's error is returned (it alone says
// the instance is alive; a registry entry missed is written again by the next heartbeat).
func (m *Manager) heartbeat(ctx context.Context) error {
	// The key lives HeartbeatTTL from when it lands, which may be long before the reply comes (a
	// stall, held replies): it counts from when it was sent.
	sent := m.clock.Now()
	if m.cc != nil {
		err := m.client.Set(ctx, m.keys.node(m.id), "1", m.cfg.HeartbeatTTL).Err()
		if err == nil {
			m.lastBeat = sent
			z := redis.Z{Score: float64(m.clock.Now().Add(m.cfg.HeartbeatTTL).UnixMilli()), Member: m.id}
			if zerr := m.client.ZAdd(ctx, m.keys.nodes(), z).Err(); zerr != nil {
				m.log.Debug("lease: fleet registry entry not written", "instance", m.id, "err", zerr)
			}
		}
		return err
	}
	p := m.client.Pipeline()
	set := m.heartbeatCmds(ctx, p)
	_, err := p.Exec(ctx)
	if err == nil {
		err = set.Err()
	}
	if err == nil {
		m.lastBeat = sent
	}
	return err
}

func (m *Manager) loadScripts(ctx context.Context) error {
	// p.ScriptLoad, not Script.Load: the latter would overwrite the shared Script's hash with the
	// not-yet-known reply of a queued command.
	p := m.client.Pipeline()
	for _, src := range []string{acquireSource, renewSource, releaseSource} { // variants fall back to EVAL
		p.ScriptLoad(ctx, src)
	}
	_, err := p.Exec(ctx)
	return err
}

func (m *Manager) publish(msg string) {
	octx, cancel := m.opCtx()
	defer cancel()
	if err := m.client.Publish(octx, m.keys.channel(), msg).Err(); err != nil && m.runCtx.Err() == nil {
		m.log.Warn("lease: publish failed", "instance", m.id, "err", err)
		m.noteErr("publish", err)
	}
}
