package lease

import (
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The subscription to the fleet's channel (<prefix>events): "release", "join" and "stop"
// announcements. Announcements are fire-and-forget: one published while this instance's subscription
// is not in place in Redis never reaches it. Two things rest on them: a release of an endpoint this
// instance was refused (it left the endpoint out until the refusing lease's expiry, takeover.go) is
// what makes it try again at once, and a join or stop is what makes it read the fleet before its next
// round.
//
// go-redis's PubSub restores its connection on its own, but on its own schedule: after a read error
// it re-dials, pausing 100 ms between failed attempts, and a connection that merely went silent (a
// partition; a server restarted behind one) is found out only by its health check, a PING sent when
// no message came for 3 s, whatever the manager's timing. So a link that recovered (link.go) does not
// mean a subscription that works: in a recorded run the instance's link recovered 124 ms after a
// partition healed, its join made the others release its share 2 ms later, and the releases, announced
// while go-redis was still re-subscribing, were lost: the instance took the endpoints when the old
// holders' leases would have expired, 2 to 3 s (a LeaseTTL at most) after they were released to it.
//
// Therefore every recovery of the link (a probe answered, or on Redis Cluster a primary reachable
// again) first replaces the subscription with a new one, on a connection of its own, and waits for
// Redis to confirm it (bounded by OpTimeout), before the heartbeat and the join that make the others
// hand endpoints over: every announcement that the recovery causes comes after the confirmation and
// reaches the new subscription. What was announced before it may have been lost, so the replacement
// also forgets the takeover schedule of refused endpoints (refusedUntil): the acquire pass that
// follows the recovery tries each of them once more (one acquire and one PTTL read per endpoint still
// held by another, once per recovery), and a PTTL read sent before the confirmation no longer leaves
// an endpoint out (scheduleTakeover). A replacement that fails (no confirmation within OpTimeout) does
// not hold the recovery back: the subscription only makes takeovers prompt, and the old one may still
// work or be restored by go-redis; the probe loop tries again every RenewInterval/2 until one is
// confirmed.
//
// go-redis may also restore a subscription whose connection was lost while the link stayed healthy (a
// connection reset: the other connections re-dial at their next call, and none fails). What was
// announced meanwhile is lost just the same, so its confirmation of the new subscription, which comes
// on the channel, is taken as a replacement is (handle).

// subscribe opens a new subscription to the fleet's channel and waits for Redis to confirm it, the
// whole bounded by OpTimeout.
func (m *Manager) subscribe() (*redis.PubSub, error) {
	octx, cancel := m.opCtx()
	defer cancel()
	ps := m.client.Subscribe(octx, m.keys.channel())
	if _, err := ps.Receive(octx); err != nil { // the subscription's confirmation
		_ = ps.Close()
		return nil, fmt.Errorf("subscribe %s: %w", m.keys.channel(), err)
	}
	return ps, nil
}

// resubscribe replaces the subscription with a new, confirmed one (see above), forgets the takeover
// schedule of refused endpoints and tells listen. It reports whether it did; when it did not, the
// probe loop tries again (retrySub). why names the occasion in the log.
func (m *Manager) resubscribe(why string) bool {
	ps, err := m.subscribe()
	m.mu.Lock()
	if m.subClosed {
		m.mu.Unlock()
		if ps != nil {
			_ = ps.Close()
		}
		return false
	}
	if err != nil {
		m.subStale = true
		m.mu.Unlock()
		if m.runCtx.Err() == nil {
			m.log.Warn("lease: subscribing anew failed: releases may be taken late until a retry succeeds",
				"instance", m.id, "on", why, "err", err)
		}
		return false
	}
	old := m.pubsub
	m.pubsub, m.subAt, m.subStale = ps, m.clock.Now(), false
	clear(m.refusedUntil)
	m.mu.Unlock()
	m.kick(m.subKick)
	if old != nil {
		// In the background: go-redis closes a PubSub under the lock its own reconnection holds, for up
		// to its dial and read timeouts.
		go func() { _ = old.Close() }()
	}
	m.log.Debug("lease: subscribed anew", "instance", m.id, "on", why)
	return true
}

// retrySub replaces the subscription if the last replacement failed and the link is healthy again
// (while it is not, its recovery replaces the subscription first); on success it asks for a discovery
// round and an acquire pass, for the announcements that may have been lost.
func (m *Manager) retrySub() {
	m.mu.Lock()
	due := m.subStale && m.state == stateRunning && !m.unhealthy && len(m.downNodes) == 0
	m.mu.Unlock()
	if due && m.resubscribe("retry") {
		m.kick(m.discoverKick)
		m.kick(m.acquireKick)
	}
}

// closeSub closes the subscription for good: the manager's end (crash, Stop, a Start that failed).
func (m *Manager) closeSub() {
	m.mu.Lock()
	ps := m.pubsub
	m.subClosed = true
	m.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
}

// listen reacts to fleet notifications on the current subscription, and moves to each new one
// (resubscribe), until the manager's context ends.
func (m *Manager) listen() {
	defer m.loops.Done()
	for {
		m.mu.Lock()
		ps := m.pubsub
		m.mu.Unlock()
		if ps == nil || !m.listenOn(ps.ChannelWithSubscriptions()) {
			return
		}
	}
}

// listenOn handles the messages of ch until the subscription is replaced (true: listen to the new one)
// or the manager's context ends (false). Messages already in ch when it is replaced are handled first.
func (m *Manager) listenOn(ch <-chan any) bool {
	for {
		select {
		case <-m.runCtx.Done():
			return false
		case <-m.subKick:
			for {
				select {
				case msg, ok := <-ch:
					if !ok {
						return true
					}
					m.handle(msg)
				default:
					return true
				}
			}
		case msg, ok := <-ch:
			if !ok {
				// Closed: replaced (subKick comes), or the manager ends.
				select {
				case <-m.runCtx.Done():
					return false
				case <-m.subKick:
					return true
				}
			}
			m.handle(msg)
		}
	}
}

// handle takes one message of a subscription's channel: an announcement, or a confirmation that
// go-redis subscribed again. The first confirmation was read by subscribe, so one on the channel means
// go-redis restored the subscription on a new connection after losing the old one (a connection reset,
// a read error) without the link failing: whatever was announced in between never reached this
// instance. It is taken as a replacement is (resubscribe): the takeover schedule of refused endpoints
// is forgotten, and a discovery round and an acquire pass follow.
func (m *Manager) handle(msg any) {
	switch msg := msg.(type) {
	case *redis.Message:
		m.notice(msg.Payload)
	case *redis.Subscription:
		if msg.Kind != "subscribe" {
			return
		}
		m.mu.Lock()
		clear(m.refusedUntil)
		m.mu.Unlock()
		m.log.Debug("lease: subscription restored by the client: announcements may have been lost", "instance", m.id)
		m.kick(m.discoverKick)
		m.kick(m.acquireKick)
	}
}

// notice handles one fleet notification: "release <instance> <endpoint>" triggers an acquire pass (the
// endpoint may be ours now); "join <instance>" and "stop <instance>" trigger a discovery round,
// coalesced when they come in bursts (discovery.go).
//
// A release of an endpoint our assignment gives to another may come from a newer view than ours: the
// releaser's round saw a change of the targets (a session added, paused, removed) or of the fleet that
// ours has not, and the endpoint may be ours in that view. Waiting for our own tick would make the
// handoff wait a DiscoveryInterval, so such a release asks for a discovery round too, coalesced as
// joins are (a rebalance releases in bursts; the first of a burst runs at once). When the views agree
// the round finds nothing new and costs the reads of the targets' change counter and the fleet's
// heartbeats.
func (m *Manager) notice(payload string) {
	f := strings.SplitN(payload, " ", 3)
	if len(f) < 2 || f[1] == m.id {
		return
	}
	switch f[0] {
	case "release":
		if len(f) == 3 {
			m.mu.Lock()
			m.notified[f[2]] = m.clock.Now()
			delete(m.refusedUntil, f[2]) // released: worth trying at once
			ours := m.assigned[f[2]]
			m.mu.Unlock()
			if !ours {
				m.announced(f[1], false)
			}
			m.kick(m.acquireKick)
		}
	case "join", "stop":
		m.announced(f[1], f[0] == "stop") // joins coalesced (discovery.go)
	}
}
