package lease

import (
	"context"
	"time"
)

// holding is one lease this instance believes it holds. Fields other than endpoint, token, ctx and
// cancel are guarded by Manager.mu.
type holding struct {
	endpoint string
	token    uint64
	// ctx is handed to every poll of this holding; it is cancelled, with the reason as its cause, the
	// moment the belief ends.
	ctx    context.Context
	cancel context.CancelCauseFunc

	deadline time.Time     // local validity deadline
	ended    bool          // the belief has ended; the holding is no longer in Manager.held
	handoff  string        // non-empty: release after the in-flight poll, with this reason
	bump     chan struct{} // the deadline moved
	wake     chan struct{} // handoff or stop requested
}

func (h *holding) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// startHoldingLocked records a fresh grant and starts its poll loop and watchdog. m.mu must be held.
func (m *Manager) startHoldingLocked(endpoint string, token uint64, deadline time.Time) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(m.runCtx))
	h := &holding{
		endpoint: endpoint, token: token, ctx: ctx, cancel: cancel, deadline: deadline,
		bump: make(chan struct{}, 1), wake: make(chan struct{}, 1),
	}
	m.held[endpoint] = h
	m.emitLocked(EventAcquired, h, ReasonAcquired)
	m.polls.Add(2)
	go m.watchdog(h)
	go m.pollLoop(h)
}

// endLocked ends the belief in h: removes it, cancels its polls' context with cause and reports kind.
// It reports whether it ended h (false if it had already ended). m.mu must be held.
func (m *Manager) endLocked(h *holding, kind EventKind, reason string, cause error) bool {
	if h.ended {
		return false
	}
	h.ended = true
	if m.held[h.endpoint] == h {
		delete(m.held, h.endpoint)
	}
	h.cancel(cause)
	m.emitLocked(kind, h, reason)
	return true
}

// extendLocked moves h's deadline forward after a renewal sent at sent was confirmed. A confirmation
// that arrives after the current deadline is too late: the belief has already ended (or ends now).
func (m *Manager) extendLocked(h *holding, sent time.Time) {
	if h.ended {
		return
	}
	now := m.clock.Now()
	if !now.Before(h.deadline) {
		m.endLocked(h, EventExpired, ReasonExpired, ErrExpired)
		return
	}
	if nd := sent.Add(m.cfg.Validity()); nd.After(h.deadline) {
		h.deadline = nd
		select {
		case h.bump <- struct{}{}:
		default:
		}
	}
	m.log.Debug("lease: renew ok", "instance", m.id, "endpoint", h.endpoint, "token", h.token, "deadline", h.deadline)
}

// watchdog ends the belief when the local validity deadline passes without a confirmed renewal.
func (m *Manager) watchdog(h *holding) {
	defer m.polls.Done()
	for {
		m.mu.Lock()
		if h.ended {
			m.mu.Unlock()
			return
		}
		left := h.deadline.Sub(m.clock.Now())
		if left <= 0 {
			m.endLocked(h, EventExpired, ReasonExpired, ErrExpired)
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		t := m.clock.NewTimer(left)
		select {
		case <-t.C():
		case <-h.bump:
			t.Stop()
		case <-h.ctx.Done():
			t.Stop()
			return
		}
	}
}

// pollLoop polls h's endpoint every PollInterval while the belief lasts. Ownership is checked against
// the local deadline before every poll. A handoff or a stop takes effect between polls: the in-flight
// poll finishes first.
func (m *Manager) pollLoop(h *holding) {
	defer m.polls.Done()
	for {
		m.mu.Lock()
		switch {
		case h.ended:
			m.mu.Unlock()
			return
		case m.state == stateStopping:
			m.endLocked(h, EventReleased, ReasonStopped, ErrReleased)
			m.stopRelease = append(m.stopRelease, h)
			m.mu.Unlock()
			return
		case m.state != stateRunning:
			m.mu.Unlock()
			return
		case h.handoff != "":
			m.endLocked(h, EventReleased, h.handoff, ErrReleased)
			m.mu.Unlock()
			m.release(h)
			return
		case !m.clock.Now().Before(h.deadline):
			m.endLocked(h, EventExpired, ReasonExpired, ErrExpired)
			m.mu.Unlock()
			return
		}
		deadline := h.deadline
		m.mu.Unlock()

		if err := m.cfg.Poll(h.ctx, Poll{Endpoint: h.endpoint, Token: h.token, Deadline: deadline}); err != nil && h.ctx.Err() == nil {
			m.log.Debug("lease: poll failed", "instance", m.id, "endpoint", h.endpoint, "token", h.token, "err", err)
		}

		t := m.clock.NewTimer(m.cfg.PollInterval)
		select {
		case <-t.C():
		case <-h.wake:
		case <-h.ctx.Done():
		}
		t.Stop()
	}
}

// release deletes h's lease key if it still holds our ID and announces the release, so the preferred
// owner takes over at once. The belief has already ended.
func (m *Manager) release(h *holding) {
	if m.runCtx.Err() != nil {
		return // crashed: send nothing
	}
	octx, cancel := m.opCtx()
	defer cancel()
	sc := m.releaseCall(h.endpoint)
	runBatch(octx, m.client, m.clock.Now, []*scriptCall{sc})
	if sc.err != nil && m.runCtx.Err() == nil {
		m.log.Warn("lease: release call failed (the lease will expire)", "instance", m.id, "endpoint", h.endpoint, "token", h.token, "err", sc.err)
		m.noteErr("release", sc.err)
	}
}
