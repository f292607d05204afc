//go:build !tenure_mutants

package lease

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The manager's safety mechanisms, at the points where a build with the tenure_mutants tag can switch
// one off to show that the harness notices (mutants.go, docs/mutants.md). In this build every point is
// the reference's own behaviour and inlines into its caller: a value, a mechanism that always holds,
// or an override that never applies.

// variant is the set of mechanisms switched off: none.
type variant struct{}

// holdingValue is the lease key's value for a holding: the instance ID and the attempt's nonce.
func (m *Manager) holdingValue(nonce string) string { return m.id + ":" + nonce }

// acquireWith is the script an acquire sends.
func (m *Manager) acquireWith() *redis.Script { return acquireScript }

// driftBound is the clock drift the local deadline allows for.
func (m *Manager) driftBound() float64 { return m.cfg.DriftBound }

// countsFrom is when a confirmation's validity starts: the send time of the request it answers.
func (m *Manager) countsFrom(sc *scriptCall) time.Time { return sc.sent }

// keepsDeadline reports that a belief ends at its local deadline.
func (m *Manager) keepsDeadline() bool { return true }

// failsClosed reports that a failed renewal ends the belief at once.
func (m *Manager) failsClosed() bool { return true }

// lostEndsBelief reports that a renewal answered "not held" (the key is gone or another's) ends the
// belief at once.
func (m *Manager) lostEndsBelief() bool { return true }

// timeoutConfirms reports whether a renewal that failed with err counts as confirmed: never.
func (m *Manager) timeoutConfirms(error) bool { return false }

// watchesLink reports that a link failure stops the writes until a probe is answered.
func (m *Manager) watchesLink() bool { return true }

// watchesDeadline reports that a watchdog ends the belief at the local deadline, cancelling a poll in
// flight.
func (m *Manager) watchesDeadline() bool { return true }

// probeAnswered reports whether a link probe that ended with err was answered.
func (m *Manager) probeAnswered(err error) bool { return err == nil }

// heartbeatLive reports whether the heartbeat loop writes: while the manager runs.
func (m *Manager) heartbeatLive() bool { return m.state == stateRunning }

// assignedHere is the part of targets that the capped rendezvous assignment over insts gives this
// instance. m.shareMu must be held.
func (m *Manager) assignedHere(insts, _ []string) map[string]bool {
	return m.share.assigned(insts, m.id)
}

// releaseSent reports whether h's release went out before its poll loop ended: never, since a
// handoff waits for the poll in flight.
func (m *Manager) releaseSent(*holding) bool { return false }

// handoffOverride, renewOverride, releaseOverride, renewPassOverride and stopOverride replace what
// follows them: never, in this build.
func (m *Manager) handoffOverride(*slot, *holding)                   {}
func (m *Manager) renewOverride(string) *scriptCall                  { return nil }
func (m *Manager) releaseOverride(_, _, _ string) *scriptCall        { return nil }
func (m *Manager) renewPassOverride([]*holding) bool                 { return false }
func (m *Manager) stopOverride(context.Context) (ok bool, err error) { return false, nil }
