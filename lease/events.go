package lease

import (
	"context"
	"log/slog"
	"time"
)

// EventKind names a change of ownership belief.
type EventKind string

// Event kinds.
const (
	// EventAcquired: the instance now holds the endpoint and will poll it.
	EventAcquired EventKind = "acquired"
	// EventReleased: the instance gave the endpoint up on purpose (rebalance, removed or paused target,
	// graceful stop). Reason is "handoff", "target-removed" or "stopped".
	EventReleased EventKind = "released"
	// EventLost: a renewal found the lease gone or another's (Reason "lost"), or could not be confirmed
	// (Reason "renew-failed": fail closed; the lease may still be ours and may be re-acquired).
	EventLost EventKind = "lost"
	// EventExpired: the local validity deadline passed without a confirmed renewal.
	EventExpired EventKind = "expired"
	// EventRenewed: a confirmed renewal moved the local validity deadline (Until) forward. Reported to
	// Observe and logged at debug level only.
	EventRenewed EventKind = "renewed"
)

// Release and loss reasons carried by Event.Reason and the releases metric.
const (
	ReasonAcquired      = "acquired"
	ReasonRenewed       = "renewed"
	ReasonHandoff       = "handoff"
	ReasonTargetRemoved = "target-removed"
	ReasonStopped       = "stopped"
	ReasonLost          = "lost"
	ReasonRenewFailed   = "renew-failed"
	ReasonExpired       = "expired"
)

// Event is one change of ownership belief, reported to Config.Observe. A crash (cancelling Start's
// context) reports nothing: a crashed process says nothing either.
type Event struct {
	Kind     EventKind
	Instance string
	Endpoint string
	// Token is the fencing token of the holding that began or ended.
	Token uint64
	// Reason says why: see the Reason constants.
	Reason string
	// At is the time of the change on the manager's clock.
	At time.Time
	// Until is the holding's local validity deadline on the manager's clock, for EventAcquired and
	// EventRenewed: the belief lasts at most until then unless a later renewal moves it. Zero for the
	// other kinds.
	Until time.Time

	_ struct{}
}

// emitLocked logs, counts and reports a belief change. m.mu must be held, so that the changes of one
// endpoint reach Observe in the order they happened.
func (m *Manager) emitLocked(kind EventKind, h *holding, reason string) {
	at := m.clock.Now()
	var until time.Time
	if (kind == EventAcquired || kind == EventRenewed) && m.keepsDeadline() {
		until = h.deadline
	}
	if kind == EventRenewed {
		// Once per holding per RenewInterval: nothing is built unless debug logging or Observe wants it.
		if m.log.Enabled(context.Background(), slog.LevelDebug) {
			m.log.Debug("lease: renew ok", "instance", m.id, "endpoint", h.endpoint, "token", h.token, "deadline", h.deadline)
		}
		if m.cfg.Observe != nil {
			m.cfg.Observe(Event{Kind: kind, Instance: m.id, Endpoint: h.endpoint, Token: h.token, Reason: reason, At: at, Until: until})
		}
		return
	}
	attrs := []any{"instance", m.id, "endpoint", h.endpoint, "token", h.token, "reason", reason}
	switch kind {
	case EventAcquired:
		m.log.Info("lease: acquire ok", attrs...)
		m.metrics.acquired()
	case EventReleased:
		m.log.Info("lease: release "+reason, attrs...)
		m.metrics.released(reason)
	default:
		m.log.Warn("lease: release "+reason, attrs...)
		m.metrics.released(reason)
	}
	m.metrics.setHeld(m.heldCountLocked())
	if m.cfg.Observe != nil {
		m.cfg.Observe(Event{Kind: kind, Instance: m.id, Endpoint: h.endpoint, Token: h.token, Reason: reason, At: at, Until: until})
	}
}
