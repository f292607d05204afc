package lease

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/mutation"
)

// The health of this instance's link to Redis.
//
// A call that ends without a reply from Redis (a timeout, a broken or refused connection) marks the
// link unhealthy: the request may have reached Redis and taken effect while the reply was lost, so
// further writes would be blind. While the link is unhealthy the manager sends no heartbeat, acquire
// or renewal and runs no discovery; a probe loop sends PING (no side effect) every RenewInterval/2,
// each bounded by OpTimeout. Only a probe that gets its reply starts recovery: heartbeat, then a
// discovery round (fresh fleet and targets), then the link is healthy again and one renewal pass and
// one acquire pass are kicked. Releases and Stop's clean-up are still sent while unhealthy: they only
// delete this instance's own keys, so one that arrives helps the others take over.

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
func (m *Manager) noteErr(op string, err error) {
	if !linkFailure(err) || m.runCtx.Err() != nil || m.mut.Has(mutation.NoLinkHealth) {
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

// noteBatch applies noteErr to the first link failure among calls.
func (m *Manager) noteBatch(op string, calls []*scriptCall) {
	for _, sc := range calls {
		if linkFailure(sc.err) {
			m.noteErr(op, sc.err)
			return
		}
	}
}

// probe does nothing while the link is healthy. While it is unhealthy it sends PING and, once a reply
// arrives, restores normal work in order: heartbeat, discovery, then renewals and acquisitions.
func (m *Manager) probe() {
	m.mu.Lock()
	if m.state != stateRunning || !m.unhealthy {
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()

	octx, cancel := m.opCtx()
	err := m.client.Ping(octx).Err()
	cancel()
	if err != nil {
		m.log.Debug("lease: redis link probe failed", "instance", m.id, "err", err)
		return
	}
	m.hbMu.Lock()
	m.mu.Lock()
	running := m.state == stateRunning
	m.mu.Unlock()
	if running {
		octx, cancel = m.opCtx()
		err = m.heartbeat(octx)
		cancel()
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

	m.mu.Lock()
	if m.state != stateRunning {
		m.mu.Unlock()
		return
	}
	m.unhealthy = false
	m.mu.Unlock()
	m.metrics.setLinkHealthy(true)
	m.log.Info("lease: redis link healthy again", "instance", m.id)
	m.publish("join " + m.id) // the others rebalance now rather than at their next discovery round
	m.kick(m.renewKick)
	m.kick(m.acquireKick)
}
