package lease

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"
)

// epState is what this instance is doing with one endpoint. Only the transitions below write the
// endpoint's keys, and each write is tied to one holding value:
//
//	free      --acquire pass-->            acquiring (the acquire call is in flight)
//	acquiring --granted-->                 held      (a holding with a new value and token)
//	acquiring --refused, failed, late-->   free      (failed or late: the value may be in Redis: stale)
//	held      --handoff or Stop, after the in-flight poll--> releasing (the release call is in flight)
//	held      --lost, renewal failed, expired-->             free      (failed or expired: stale)
//	releasing --release call returned-->   free      (failed: stale)
//
// An endpoint is acquired only from free, so never while its release is in flight. A stale value is
// one of this instance's earlier holdings that may still be in Redis; a slot remembers every one
// (stale.go), and the next acquire attempt sends a release of each (compare-and-delete on that value)
// just before the acquire, in the same pipeline.
type epState int

const (
	epFree epState = iota
	epAcquiring
	epHeld
	epReleasing
)

// slot is one endpoint's state here. Guarded by Manager.mu.
type slot struct {
	state epState
	value string       // the holding value in flight or held (acquiring, held, releasing)
	h     *holding     // held, and releasing when it came from a holding
	stale []staleValue // earlier values of ours that may still be in Redis, oldest first (stale.go)
}

// holding is one lease this instance believes it holds. Fields other than endpoint, value, token, ctx
// and cancel are guarded by Manager.mu.
type holding struct {
	endpoint string
	value    string // the lease key's value for this holding: <instance>:<nonce>
	token    uint64
	// ctx is handed to every poll of this holding; it is cancelled, with the reason as its cause, the
	// moment the belief ends.
	ctx    context.Context
	cancel context.CancelCauseFunc

	deadline time.Time     // local validity deadline
	epochAt  time.Time     // cluster layout: when the last call that set the epoch key's TTL was sent (guard.go)
	ended    bool          // the belief has ended
	handoff  string        // non-empty: release after the in-flight poll, with this reason
	wake     chan struct{} // handoff or stop requested
	// polling is set (with Manager.mu held) when a poll is about to be made and cleared when it has
	// returned: Stop releases at once a holding with no poll in flight.
	polling atomic.Bool
}

func (h *holding) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// newValueLocked returns a fresh holding value: the instance ID and a nonce unique to this attempt
// (the manager's start time and an attempt counter), so that a late or re-sent renewal or release of
// an earlier holding can never touch this one. m.mu must be held.
func (m *Manager) newValueLocked() string {
	m.attempts++
	return m.holdingValue(m.boot + "." + strconv.FormatUint(m.attempts, 36))
}

// slotLocked returns ep's slot, creating a free one. m.mu must be held.
func (m *Manager) slotLocked(ep string) *slot {
	s := m.slots[ep]
	if s == nil {
		s = &slot{}
		m.slots[ep] = s
	}
	return s
}

// freeLocked moves ep to free, adding stale (if any) to the values its next acquire releases. A slot
// left free with no stale value is dropped. m.mu must be held.
func (m *Manager) freeLocked(ep, stale string) {
	s := m.slotLocked(ep)
	s.addStale(stale, m.clock.Now())
	if len(s.stale) == 0 {
		delete(m.slots, ep)
		return
	}
	s.state, s.value, s.h = epFree, "", nil
}

// startHoldingLocked records a fresh grant and starts its poll loop and watchdog. m.mu must be held.
func (m *Manager) startHoldingLocked(s *slot, endpoint string, token uint64, deadline time.Time) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(m.runCtx))
	h := &holding{
		endpoint: endpoint, value: s.value, token: token, ctx: ctx, cancel: cancel, deadline: deadline,
		wake: make(chan struct{}, 1),
	}
	s.state, s.h, s.stale = epHeld, h, nil // the grant found none of the stale values in Redis
	m.heldCount++
	m.emitLocked(EventAcquired, h, ReasonAcquired)
	m.polls.Add(1)
	if m.keepsDeadline() && m.watchesDeadline() {
		m.polls.Add(1)
		go m.watchdog(h)
	}
	go m.pollLoop(h)
}

// endLocked ends the belief in h: cancels its polls' context with cause and reports kind. The slot
// moves to next: free (with h's value as stale when keep is set) or releasing. It reports whether it
// ended h (false if it had already ended). m.mu must be held.
func (m *Manager) endLocked(h *holding, kind EventKind, reason string, cause error, next epState, stale bool) bool {
	if h.ended {
		return false
	}
	h.ended = true
	m.heldCount--
	h.cancel(cause)
	if s := m.slots[h.endpoint]; s != nil && s.h == h {
		switch next {
		case epReleasing:
			s.state = epReleasing
		default:
			v := ""
			if stale {
				v = h.value
			}
			m.freeLocked(h.endpoint, v)
		}
	}
	m.emitLocked(kind, h, reason)
	return true
}

// extendLocked moves h's deadline forward after a confirmed renewal. A confirmation that arrives at or
// after the current deadline is too late: the belief has already ended (or ends now).
func (m *Manager) extendLocked(h *holding, sc *scriptCall) {
	if h.ended {
		return
	}
	nd, ok := m.confirm(h.deadline, sc)
	if !ok && m.keepsDeadline() {
		m.endLocked(h, EventExpired, ReasonExpired, ErrExpired, epFree, true)
		return
	}
	if nd.After(h.deadline) {
		h.deadline = nd // forward only: the watchdog, armed for the old deadline, reads it then
		m.emitLocked(EventRenewed, h, ReasonRenewed)
	}
}

// watchdog ends the belief when the local validity deadline passes without a confirmed renewal. It
// sleeps until the deadline it last read and then reads it again: a renewal only moves the deadline
// forward, so the watchdog is never late, and it wakes about once per LeaseTTL rather than at every
// renewal of every lease (10,000 leases renewed every second are 10,000 wake-ups and timers a second).
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
			m.endLocked(h, EventExpired, ReasonExpired, ErrExpired, epFree, true)
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		t := m.clock.NewTimer(left)
		select {
		case <-t.C():
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
	first := true
	for {
		m.mu.Lock()
		switch {
		case h.ended:
			m.mu.Unlock()
			return
		case m.state == stateStopping:
			m.endLocked(h, EventReleased, ReasonStopped, ErrReleased, epReleasing, false)
			rel := m.stopRel
			m.mu.Unlock()
			if !m.releaseSent(h) {
				rel.add(h) // now, not once the instance's other polls have ended (stop.go)
			}
			return
		case m.state != stateRunning:
			m.mu.Unlock()
			return
		case h.handoff != "":
			m.endLocked(h, EventReleased, h.handoff, ErrReleased, epReleasing, false)
			m.mu.Unlock()
			if !m.releaseSent(h) {
				m.releaseQueued(h)
			}
			return
		case m.keepsDeadline() && !m.clock.Now().Before(h.deadline):
			m.endLocked(h, EventExpired, ReasonExpired, ErrExpired, epFree, true)
			m.mu.Unlock()
			return
		}
		deadline := h.deadline
		h.polling.Store(true)
		m.mu.Unlock()

		if err := m.cfg.Poll(h.ctx, Poll{Endpoint: h.endpoint, Token: h.token, Deadline: deadline}); err != nil && h.ctx.Err() == nil {
			m.log.Debug("lease: poll failed", "instance", m.id, "endpoint", h.endpoint, "token", h.token, "err", err)
		}
		h.polling.Store(false)

		// The first poll comes at once (it ends the endpoint's takeover). The wait after it is drawn
		// from the whole interval, then each wait is jittered down by up to 10%, as the other loops
		// are: the holdings a fleet acquires together (at the end of the fresh-dataset guard, 10,000
		// in a few hundred milliseconds) would otherwise poll in bursts of every endpoint at once,
		// several times over before the 10% jitter spread them, and in those bursts renewals
		// overran their call bound and failed closed. No wait is longer than PollInterval.
		wait := m.jitter(m.cfg.PollInterval)
		if first {
			first = false
			wait = m.phase(m.cfg.PollInterval)
		}
		t := m.clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-h.wake:
		case <-h.ctx.Done():
		}
		t.Stop()
	}
}

// release deletes h's lease key if it still holds h's value and announces the release, so the
// preferred owner takes over at once. The belief has already ended and the slot is releasing; it
// becomes free when the call returns (and the endpoint may be acquired again).
func (m *Manager) release(h *holding) {
	if m.runCtx.Err() != nil {
		return // crashed: send nothing
	}
	m.releaseAll([]*holding{h})
}

// releaseAll is release for several holdings, acquireChunk per pipelined round trip.
func (m *Manager) releaseAll(hs []*holding) {
	errs := m.releaseBatch(m.opCtx, hs)
	noted := false
	for i, err := range errs {
		if h := hs[i]; err != nil && m.runCtx.Err() == nil {
			m.log.Warn("lease: release call failed (the lease will expire)", "instance", m.id, "endpoint", h.endpoint, "token", h.token, "err", err)
			if !noted {
				m.noteErr("release", err)
				noted = true
			}
		}
	}
	m.kick(m.acquireKick) // the endpoints may be ours again
}

// releaseBatch deletes the lease of each of hs if it still holds that holding's value, announcing
// each release, acquireChunk per pipelined round trip, each bounded by a context from step; tail goes
// at the end of the last round trip (one of its own when hs is empty). It settles the slots: a
// releasing slot becomes free (its value stale if the call failed), and a stale value whose release
// was answered is forgotten. errs[i] is the error of hs[i]'s call.
func (m *Manager) releaseBatch(step func() (context.Context, context.CancelFunc), hs []*holding, tail ...*scriptCall) (errs []error) {
	errs = make([]error, len(hs))
	for lo := 0; lo < len(hs) || (lo == 0 && len(tail) > 0); lo += acquireChunk {
		part := hs[lo:min(lo+acquireChunk, len(hs))]
		calls := make([]*scriptCall, len(part), len(part)+len(tail))
		for i, h := range part {
			calls[i] = m.releaseCall(h.endpoint, h.value, true)
		}
		if lo+acquireChunk >= len(hs) {
			calls = append(calls, tail...)
		}
		octx, cancel := step()
		runBatch(octx, m.client, m.clock.Now, calls)
		cancel()
		m.mu.Lock()
		for i, sc := range calls[:len(part)] {
			h := part[i]
			errs[lo+i] = sc.err
			s := m.slots[h.endpoint]
			switch {
			case s == nil:
			case s.state == epReleasing && s.value == h.value:
				stale := ""
				if sc.err != nil {
					stale = h.value
				}
				m.freeLocked(h.endpoint, stale)
			case sc.err == nil:
				s.forgetStale(h.value) // a stale value Stop released
				if s.state == epFree && len(s.stale) == 0 {
					delete(m.slots, h.endpoint)
				}
			}
		}
		m.mu.Unlock()
	}
	return errs
}

// releaseQueued is release through the manager's release loop, which sends every release queued
// while its previous round trip was in flight in one pipeline: a rebalancing hands off many endpoints
// at once (after the fresh-dataset guard, an instance whose view of a starting fleet was incomplete
// acquired twice its share and hands half of it off within a few polls), and a round trip per
// endpoint exhausted the connection pool, timed out and took the link down with it. It returns when
// the release call has returned, or at once after a crash.
func (m *Manager) releaseQueued(h *holding) {
	if m.runCtx.Err() != nil {
		return // crashed: send nothing
	}
	done := make(chan struct{})
	m.relMu.Lock()
	m.relQueue = append(m.relQueue, queuedRelease{h, done})
	m.relMu.Unlock()
	m.kick(m.relKick)
	select {
	case <-done:
	case <-m.runCtx.Done(): // the slot stays releasing: a crash keeps its value for a later Stop
	}
}

type queuedRelease struct {
	h    *holding
	done chan struct{}
}

// releaseLoop sends the queued releases until the manager's context ends. Stop ends it only after
// every poll loop has returned, so every release queued before that is sent.
func (m *Manager) releaseLoop() {
	defer m.loops.Done()
	for {
		select {
		case <-m.runCtx.Done():
			return
		case <-m.relKick:
		}
		for {
			m.relMu.Lock()
			q := m.relQueue
			m.relQueue = nil
			m.relMu.Unlock()
			if len(q) == 0 {
				break
			}
			hs := make([]*holding, len(q))
			for i, r := range q {
				hs[i] = r.h
			}
			m.releaseAll(hs)
			for _, r := range q {
				close(r.done)
			}
		}
	}
}
