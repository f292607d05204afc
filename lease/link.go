package lease

import (
	"context"
	"errors"
	"maps"

	"github.com/redis/go-redis/v9"
)

// The health of this instance's link to Redis.
//
// A call that ends without a reply from Redis (a timeout, a broken or refused connection) marks the
// link unhealthy: the request may have reached Redis and taken effect while the reply was lost, so
// further writes would be blind. While the link is unhealthy the manager sends no heartbeat, acquire
// or renewal and runs no discovery; a probe loop sends PING (no side effect) every RenewInterval/2,
// each bounded by OpTimeout. Only a probe that gets its reply starts recovery: a new subscription to
// the channel (subscription.go), heartbeat, then a discovery round (fresh fleet and targets), then the
// link is healthy again and one renewal pass and one acquire pass are kicked. Releases and Stop's
// clean-up are still sent while unhealthy: they only delete this instance's own keys, so one that
// arrives helps the others take over.
//
// On Redis Cluster (a ClusterClient with the cluster key layout) the link is judged per primary
// instead: every key of an endpoint is in one slot, so a call left without a reply is blind only about
// the endpoint it named, on the shard it went to. An acquire or renewal without a reply marks that
// call's primary down (runGroups records it); while it is down no acquire or renewal goes to it, and
// the leases it serves run out at their local deadlines (the renewal that failed has already ended
// its own, fail closed), while the endpoints of the other shards are renewed, acquired and polled as
// before. The probe loop PINGs each down primary, bounded by OpTimeout; it is up again when it
// answers, or when the client finds its slots served by another node (a promoted replica): the
// instance then subscribes to the channel anew (subscription.go), writes its heartbeat (held back
// while its own primary was down), announces itself (the others read its heartbeat at once instead of
// at their next scan) and kicks a discovery round, a renewal pass and an acquire pass. No write goes
// to a primary marked down, the heartbeat included: under a one-way partition (requests land, replies
// are lost) the instance's heartbeat then expires and the others take its endpoints over, as with one
// primary. The calls that name no
// endpoint — heartbeat, discovery, publish, the PTTL and guard reads that time a takeover — are not
// judged at all there: they go to whichever shard holds their key, a failure of one only delays
// balance or a takeover until its next round, and fencing the whole instance off for it would stop
// the renewals of every shard (their leases would lapse while their primaries answer).

// linkFailure reports whether err means that no reply came back from Redis. A Redis error reply
// (including redis.Nil) is a reply and does not count.
func linkFailure(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	var reply redis.Error
	return !errors.As(err, &reply)
}

// linkHealthy reports whether writes may be sent.
func (m *Manager) linkHealthy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.unhealthy
}

// noteErr marks the link unhealthy if err, returned by the call named op, is a link failure. Failures
// caused by the manager's own end (crash or stop) do not count.
//
// Per-primary link health (m.cc set) ignores it: see the top of this file and noteBatch.
func (m *Manager) noteErr(op string, err error) {
	if !linkFailure(err) || m.runCtx.Err() != nil || m.cc != nil || !m.watchesLink() {
		return
	}
	m.mu.Lock()
	if m.unhealthy || m.state != stateRunning {
		m.mu.Unlock()
		return
	}
	m.unhealthy = true
	m.mu.Unlock()
	m.metrics.setLinkHealthy(false)
	m.log.Warn("lease: redis link unhealthy: no more writes until a probe is answered",
		"instance", m.id, "op", op, "err", err)
}

// noteBatch applies noteErr to the first link failure among calls; with per-primary link health, it
// marks down the primary of each call that failed so instead (noteNodeDown).
func (m *Manager) noteBatch(op string, calls []*scriptCall) {
	for _, sc := range calls {
		if !linkFailure(sc.err) {
			continue
		}
		if m.cc == nil {
			m.noteErr(op, sc.err)
			return
		}
		if sc.node != "" && len(sc.keys) > 0 {
			m.noteNodeDown(op, sc.node, sc.keys[0], sc.err)
		}
	}
}

// noteNodeDown marks the primary at addr down after the call named op, on key, ended without a reply.
func (m *Manager) noteNodeDown(op, addr, key string, err error) {
	if m.runCtx.Err() != nil || !m.watchesLink() {
		return
	}
	m.mu.Lock()
	if _, down := m.downNodes[addr]; down || m.state != stateRunning {
		m.mu.Unlock()
		return
	}
	m.downNodes[addr] = key
	m.mu.Unlock()
	m.metrics.setLinkHealthy(false)
	m.log.Warn("lease: redis node unreachable: no acquire or renewal of its endpoints until a probe is answered",
		"instance", m.id, "node", addr, "op", op, "err", err)
}

// onDownNodes returns those of eps whose lease key is served by a primary marked down (per-primary
// link health; nil otherwise, and when no primary is down). It reads the client's view of the
// cluster, so it is called without m.mu held.
func (m *Manager) onDownNodes(eps []string) map[string]bool {
	if m.cc == nil {
		return nil
	}
	m.mu.Lock()
	var down map[string]string
	if len(m.downNodes) > 0 {
		down = maps.Clone(m.downNodes)
	}
	m.mu.Unlock()
	if down == nil {
		return nil
	}
	octx, cancel := m.opCtx()
	defer cancel()
	out := map[string]bool{}
	for _, ep := range eps {
		if _, ok := down[nodeOf(octx, m.cc, m.keys.lease(ep))]; ok {
			out[ep] = true
		}
	}
	return out
}

// nodeDownFor reports whether key is served by a primary marked down (per-primary link health only).
// It reads the client's view of the cluster, so it is called without m.mu held.
func (m *Manager) nodeDownFor(key string) bool {
	if m.cc == nil {
		return false
	}
	m.mu.Lock()
	none := len(m.downNodes) == 0
	m.mu.Unlock()
	if none {
		return false
	}
	octx, cancel := m.opCtx()
	defer cancel()
	at := nodeOf(octx, m.cc, key)
	m.mu.Lock()
	defer m.mu.Unlock()
	_, down := m.downNodes[at]
	return down
}

// probeNodes is the probe with per-primary link health: each primary marked down is up again once it
// answers PING, or once the client sees the slot of the key that failed served by another node.
func (m *Manager) probeNodes() {
	m.mu.Lock()
	if m.state != stateRunning || len(m.downNodes) == 0 {
		m.mu.Unlock()
		return
	}
	down := maps.Clone(m.downNodes)
	m.mu.Unlock()
	var up []string
	for addr, key := range down {
		// The client learns of a promotion only when it reloads its slot map, which it does by itself
		// only after a command routed through it fails, or at its ClusterStateReloadInterval; a PING of
		// the node goes around that. So each probe asks for a reload (in the background): a replica
		// promoted in the meantime is found within a probe, not at the next failing heartbeat or
		// discovery round that happens to hit that shard (seen: 1.4 s after the promotion, past a
		// renewal interval and a call bound).
		m.cc.ReloadState(context.Background())
		if m.probeNode(addr, key) {
			up = append(up, addr)
		}
	}
	if len(up) == 0 {
		return
	}
	m.mu.Lock()
	if m.state != stateRunning {
		m.mu.Unlock()
		return
	}
	for _, addr := range up {
		delete(m.downNodes, addr)
	}
	healthy := len(m.downNodes) == 0
	m.mu.Unlock()
	if healthy {
		m.metrics.setLinkHealthy(true)
	}
	m.log.Info("lease: redis node reachable again", "instance", m.id, "nodes", up)
	// As after an unhealthy link: a new subscription first (subscription.go; the channel's node may be
	// the one that was down), then the heartbeat (it may have been held back, and have expired), then
	// an announcement, so that the others read it now rather than at their next scan.
	m.resubscribe("node recovery")
	if !m.nodeDownFor(m.keys.node(m.id)) {
		m.hbMu.Lock()
		m.mu.Lock()
		running := m.state == stateRunning // Stop deletes the heartbeat after taking hbMu: never after it
		m.mu.Unlock()
		var err error
		if running {
			octx, cancel := m.opCtx()
			err = m.heartbeat(octx)
			cancel()
		}
		m.hbMu.Unlock()
		if err != nil {
			m.log.Debug("lease: heartbeat after a probe failed", "instance", m.id, "err", err)
		}
	}
	m.publish("join " + m.id)
	m.kick(m.discoverKick)
	m.kick(m.renewKick)
	m.kick(m.acquireKick)
}

// probeNode reports whether the primary at addr, marked down for key's slot, is up again: the client
// finds key's slot served by another node, or the node answers PING. When it does not answer, the slot
// map is read again: the reload probeNodes asked for may have landed while the PING waited. Each step
// is bounded by OpTimeout.
func (m *Manager) probeNode(addr, key string) bool {
	octx, cancel := m.opCtx()
	cl, err := m.cc.MasterForKey(octx, key)
	up := err == nil && (cl.Options().Addr != addr || cl.Ping(octx).Err() == nil)
	cancel()
	if up {
		return true
	}
	octx, cancel = m.opCtx()
	defer cancel()
	cl, err = m.cc.MasterForKey(octx, key)
	return err == nil && cl.Options().Addr != addr
}

// probe does nothing while the link is healthy (beyond a replacement of the subscription still owed:
// retrySub). While it is unhealthy it sends PING and, once a reply arrives, restores normal work: a new
// subscription set up beside the heartbeat and the discovery, then the join, renewals and acquisitions.
func (m *Manager) probe() {
	m.retrySub()
	if m.cc != nil {
		m.probeNodes()
		return
	}
	m.mu.Lock()
	if m.state != stateRunning || !m.unhealthy {
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()

	octx, cancel := m.opCtx()
	err := m.client.Ping(octx).Err()
	cancel()
	if !m.probeAnswered(err) {
		m.log.Debug("lease: redis link probe failed", "instance", m.id, "err", err)
		return
	}
	// A new subscription, confirmed before the join makes the others hand endpoints over, so that their
	// release announcements reach this instance (subscription.go). It is set up while the heartbeat and
	// the discovery go out: each costs a round trip (the subscription a dial and a handshake as well),
	// and on a slow link the recovery's round trips one after another cost the takeover of this
	// instance's own endpoints its bound. Seeing the heartbeat, another instance may release an
	// endpoint to this one before the confirmation, and that announcement may be lost; but the
	// replacement forgets the takeover schedule, and the acquire pass comes after it, so such an
	// endpoint is tried then. A failure does not hold the recovery back (retrySub tries again).
	subbed := make(chan struct{})
	go func() {
		defer close(subbed)
		m.resubscribe("link recovery")
	}()
	defer func() { <-subbed }()
	m.hbMu.Lock()
	m.mu.Lock()
	running := m.state == stateRunning
	m.mu.Unlock()
	if running {
		// The join below is worth something only while the heartbeat is in Redis: one answered a
		// HeartbeatTTL after it was sent (a stall, held replies) may have expired, and is written again.
		for range 2 {
			octx, cancel = m.opCtx()
			err = m.heartbeat(octx)
			cancel()
			if err != nil || m.clock.Now().Sub(m.lastBeat) < m.cfg.HeartbeatTTL {
				break
			}
		}
	}
	m.hbMu.Unlock()
	if !running {
		return
	}
	if err != nil {
		m.log.Debug("lease: heartbeat after a probe failed", "instance", m.id, "err", err)
		return
	}
	if err := m.refresh(); err != nil {
		m.log.Debug("lease: discovery after a probe failed", "instance", m.id, "err", err)
		return
	}

	<-subbed
	m.mu.Lock()
	if m.state != stateRunning {
		m.mu.Unlock()
		return
	}
	m.unhealthy = false
	m.mu.Unlock()
	m.metrics.setLinkHealthy(true)
	m.log.Info("lease: redis link healthy again", "instance", m.id)
	// The others rebalance now rather than at their next discovery round. Before the kicks: an acquire
	// sent after a call of this instance went unanswered must follow an answer the history records (the
	// reads of a discovery are counted, not recorded), or it reads as a write sent blind; the join's
	// answer is one (random-nemesis seed 249902345 in virtual time: a discovery read lost under latency,
	// then acquires sent beside the join).
	m.publish("join " + m.id)
	m.kick(m.renewKick)
	m.kick(m.acquireKick)
}
