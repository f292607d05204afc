package election

import "errors"

// Sentinel errors. Test for them with errors.Is; the errors returned by this package wrap them with detail
// (the role, the field, the backend's own error).
var (
	// ErrInvalidConfig is wrapped by every Config.Validate failure; the message names the field and rule.
	ErrInvalidConfig = errors.New("election: invalid config")
	// ErrBackendUnavailable is returned by Start when the backend did not answer before Start's context
	// ended (or Stop was called).
	ErrBackendUnavailable = errors.New("election: backend unavailable")
	// ErrNotLeader is returned by a LeaderOnly function called while this elector does not lead.
	ErrNotLeader = errors.New("election: not the leader")
	// ErrNotHeld is returned by Backend.Renew and Backend.Release when the role is not (or no longer)
	// held by the given instance and term.
	ErrNotHeld = errors.New("election: leadership not held")
	// ErrLeadershipLost is the cause of a leader context cancelled because leadership ended involuntarily
	// (renewal failed or the local deadline passed); RunOnce wraps it when its function outlived leadership.
	ErrLeadershipLost = errors.New("election: leadership lost")
	// ErrDeadline is the cause of a leadership that reached its local deadline without a confirmed renewal.
	ErrDeadline = errors.New("election: local lease deadline passed without a confirmed renewal")
	// ErrStopped is the cause of a leader context cancelled by a graceful Stop.
	ErrStopped = errors.New("election: elector stopped")
	// ErrCrashed is the cause of a leader context cancelled because the context given to Start ended.
	ErrCrashed = errors.New("election: elector context cancelled")
	// ErrAlreadyStarted is returned by a second call to Start.
	ErrAlreadyStarted = errors.New("election: elector already started")
	// ErrNotStarted is returned by Stop on an elector that was never started.
	ErrNotStarted = errors.New("election: elector not started")
	// ErrLinkUnhealthy is returned by the Redis backend's TryAcquire and Renew when an earlier call got
	// no reply and the probe sent since was not answered either: nothing else was sent.
	ErrLinkUnhealthy = errors.New("election: backend link unhealthy")
	// ErrClosed is returned by a backend used after Close.
	ErrClosed = errors.New("election: backend closed")
)
