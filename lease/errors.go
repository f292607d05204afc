package lease

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these where one applies; test with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every error Validate and New return.
	ErrInvalidConfig = errors.New("lease: invalid config")
	// ErrUnavailable is wrapped by Start when Redis cannot be reached.
	ErrUnavailable = errors.New("lease: redis unavailable")
	// ErrAlreadyStarted is returned by a second call to Start.
	ErrAlreadyStarted = errors.New("lease: already started")
	// ErrNotRunning is returned by Stop when the manager was never started, has crashed or is stopped.
	ErrNotRunning = errors.New("lease: not running")
	// ErrNotReplicated: with Config.WaitReplicas, WAIT did not report a grant or renewal on enough
	// replicas within OpTimeout; the call counts as failed (fail closed).
	ErrNotReplicated = errors.New("lease: not acknowledged by enough replicas")

	// The causes a poll's context carries (context.Cause) when it ends.

	// ErrExpired: the local validity deadline passed without a confirmed renewal.
	ErrExpired = errors.New("lease: local validity deadline passed")
	// ErrLost: a renewal found the lease no longer held by this instance.
	ErrLost = errors.New("lease: lost")
	// ErrRenewFailed: a renewal failed or timed out; the lease may be lost, so polling stops (fail closed).
	ErrRenewFailed = errors.New("lease: renewal not confirmed")
	// ErrReleased: the lease was handed off (rebalance, removed target) or released by Stop.
	ErrReleased = errors.New("lease: released")
	// ErrCrashed: the context given to Start was cancelled.
	ErrCrashed = errors.New("lease: manager context cancelled")
)
