package lease

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

func (m *Manager) acquireCall(endpoint string) *scriptCall {
	return &scriptCall{
		script: acquireScript,
		keys:   []string{m.keys.lease(endpoint), m.keys.fence(endpoint), m.keys.epoch()},
		args:   []any{m.id, ttlMillis(m.cfg.LeaseTTL)},
	}
}

func (m *Manager) renewCall(endpoint string) *scriptCall {
	return &scriptCall{
		script: renewScript,
		keys:   []string{m.keys.lease(endpoint)},
		args:   []any{m.id, ttlMillis(m.cfg.LeaseTTL)},
	}
}

func (m *Manager) releaseCall(endpoint string) *scriptCall {
	return &scriptCall{
		script: releaseScript,
		keys:   []string{m.keys.lease(endpoint)},
		args:   []any{m.id, ttlMillis(m.cfg.LeaseTTL), m.keys.channel(), "release " + m.id + " " + endpoint},
	}
}

// acquirePass hands off held endpoints this instance is no longer preferred for and tries to acquire,
// in one pipelined round trip, every preferred endpoint it does not hold.
func (m *Manager) acquirePass() {
	m.acquireMu.Lock()
	defer m.acquireMu.Unlock()

	m.mu.Lock()
	if m.state != stateRunning || m.unhealthy {
		m.mu.Unlock()
		return
	}
	var want []string
	for ep := range m.assigned {
		if _, ok := m.held[ep]; !ok {
			want = append(want, ep)
		}
	}
	for ep, h := range m.held {
		if !m.assigned[ep] && h.handoff == "" {
			h.handoff = ReasonHandoff
			if !m.targetSet[ep] {
				h.handoff = ReasonTargetRemoved
			}
			h.signal()
		}
	}
	m.mu.Unlock()
	if len(want) == 0 {
		return
	}
	slices.Sort(want)
	calls := make([]*scriptCall, len(want))
	for i, ep := range want {
		calls[i] = m.acquireCall(ep)
	}
	octx, cancel := m.opCtx()
	runBatch(octx, m.client, m.clock.Now, calls)
	cancel()
	m.noteBatch("acquire", calls)

	m.mu.Lock()
	defer m.mu.Unlock()
	for i, sc := range calls {
		ep := want[i]
		switch {
		case m.state == stateDone:
			return // crashed: believe nothing
		case sc.err != nil:
			m.metrics.acquireFailed("error")
			m.log.Warn("lease: acquire failed", "instance", m.id, "endpoint", ep, "token", 0, "err", sc.err)
		case sc.res == 0:
			m.metrics.acquireFailed("held")
			m.log.Debug("lease: acquire failed: held by another instance", "instance", m.id, "endpoint", ep, "token", 0)
		case sc.res < 0:
			m.metrics.acquireFailed("guard")
			m.log.Debug("lease: acquire refused: fresh-dataset guard", "instance", m.id, "endpoint", ep, "token", 0)
		case m.state == stateStopping:
			// Granted while Stop began: it is ours in Redis, so Stop must release it.
			m.stopRelease = append(m.stopRelease, &holding{endpoint: ep, token: uint64(sc.res)})
		default:
			deadline := sc.sent.Add(m.cfg.Validity())
			if !m.clock.Now().Before(deadline) {
				m.metrics.acquireFailed("error")
				m.log.Warn("lease: acquire reply came after its validity ended", "instance", m.id, "endpoint", ep, "token", sc.res)
				continue
			}
			if _, ok := m.held[ep]; ok {
				continue
			}
			m.startHoldingLocked(ep, uint64(sc.res), deadline)
			if at, ok := m.notified[ep]; ok {
				m.metrics.handoffSeconds(m.clock.Now().Sub(at).Seconds())
				delete(m.notified, ep)
			}
		}
	}
}

// renewPass renews every held lease in one pipelined round trip. A lease that is confirmed gets a new
// deadline counted from the send time; one that is gone is lost; one whose renewal errs or times out
// stops being polled at once (fail closed) and may be re-acquired on a later pass. Nothing is sent
// while the link is unhealthy: the leases then run out at their local deadlines, and in Redis.
func (m *Manager) renewPass() {
	m.mu.Lock()
	if m.state == stateDone || m.unhealthy {
		m.mu.Unlock()
		return
	}
	hs := make([]*holding, 0, len(m.held))
	for _, h := range m.held {
		hs = append(hs, h)
	}
	m.mu.Unlock()
	if len(hs) == 0 {
		return
	}
	calls := make([]*scriptCall, len(hs))
	for i, h := range hs {
		calls[i] = m.renewCall(h.endpoint)
	}
	octx, cancel := m.opCtx()
	runBatch(octx, m.client, m.clock.Now, calls)
	cancel()
	m.noteBatch("renew", calls)

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
		case sc.err != nil:
			m.metrics.renewFailed()
			m.log.Warn("lease: renew failed", "instance", m.id, "endpoint", h.endpoint, "token", h.token, "err", sc.err)
			ended = m.endLocked(h, EventLost, ReasonRenewFailed, ErrRenewFailed) || ended
		case sc.res == 1:
			m.extendLocked(h, sc.sent)
		default:
			ended = m.endLocked(h, EventLost, ReasonLost, ErrLost) || ended
		}
	}
	if ended {
		m.kick(m.acquireKick) // try to get them back (a lease that is still ours returns its token)
	}
}

// discover reads the live instances and the targets and recomputes this instance's assignment. On an
// error the previous view is kept. It does nothing while the link is unhealthy (the probe runs it on
// recovery).
func (m *Manager) discover() {
	if !m.linkHealthy() {
		return
	}
	if err := m.refresh(); err != nil && m.runCtx.Err() == nil {
		m.log.Warn("lease: discovery failed", "instance", m.id, "err", err)
	}
}

// refresh is one discovery round: it only reads. On success it kicks an acquire pass.
func (m *Manager) refresh() error {
	ctx, cancel := m.opCtxFor(m.cfg.DiscoveryInterval)
	defer cancel()
	nodeKeys, err := scanKeys(ctx, m.client, m.keys.nodePattern())
	if err != nil {
		m.noteErr("discovery", err)
		return fmt.Errorf("instances: %w", err)
	}
	targets, err := m.targets.Targets(ctx)
	if err != nil {
		return fmt.Errorf("targets: %w", err) // a TargetSource may not use this link: not counted
	}
	prefix := m.keys.node("")
	insts := []string{m.id} // we are alive even if our heartbeat was lost with a restarted Redis
	for _, k := range nodeKeys {
		insts = append(insts, strings.TrimPrefix(k, prefix))
	}
	insts = dedupe(insts)
	assign := Assign(insts, targets)

	m.mu.Lock()
	m.instances = insts
	m.targetSet = make(map[string]bool, len(targets))
	for _, t := range targets {
		m.targetSet[t] = true
	}
	m.assigned = make(map[string]bool)
	for ep, owner := range assign {
		if owner == m.id {
			m.assigned[ep] = true
		}
	}
	cutoff := m.clock.Now().Add(-m.cfg.LeaseTTL)
	for ep, at := range m.notified {
		if at.Before(cutoff) {
			delete(m.notified, ep)
		}
	}
	m.mu.Unlock()
	m.kick(m.acquireKick)
	return nil
}

func (m *Manager) opCtxFor(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.runCtx, max(d, m.cfg.OpTimeout))
}

func (m *Manager) heartbeat(ctx context.Context) error {
	return m.client.Set(ctx, m.keys.node(m.id), "1", m.cfg.HeartbeatTTL).Err()
}

func (m *Manager) loadScripts(ctx context.Context) error {
	// p.ScriptLoad, not Script.Load: the latter would overwrite the shared Script's hash with the
	// not-yet-known reply of a queued command.
	p := m.client.Pipeline()
	for _, src := range []string{acquireSource, renewSource, releaseSource} {
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

// listen reacts to fleet notifications: "release <instance> <endpoint>" triggers an acquire pass (the
// endpoint may be ours now); "join <instance>" and "stop <instance>" trigger a discovery round.
func (m *Manager) listen() {
	defer m.loops.Done()
	ch := m.pubsub.Channel()
	for {
		select {
		case <-m.runCtx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			f := strings.SplitN(msg.Payload, " ", 3)
			if len(f) < 2 || f[1] == m.id {
				continue
			}
			switch f[0] {
			case "release":
				if len(f) == 3 {
					m.mu.Lock()
					m.notified[f[2]] = m.clock.Now()
					m.mu.Unlock()
					m.kick(m.acquireKick)
				}
			case "join", "stop":
				m.kick(m.discoverKick)
			}
		}
	}
}
