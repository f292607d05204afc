package election

import (
	"context"
	"time"
)

// Backend is the store an election runs on: one lock per role. The Elector is its only caller in normal
// use, but the contract is public so a harness or a user can drive or replace it.
//
// Every method must honour ctx (return when it ends) and be safe for concurrent use. A call that returns
// an error may or may not have taken effect: callers treat such outcomes as unknown.
type Backend interface {
	// TryAcquire tries to make id the leader of role for ttl. It returns ok=false with a nil error when the
	// role is held by someone else (or cannot yet be granted safely). It must be idempotent: when the role
	// is already held by id (a retried request whose first attempt took effect), it succeeds with the term
	// of that holding. A granted term is greater than every term granted earlier for role.
	TryAcquire(ctx context.Context, role, id string, ttl time.Duration) (term uint64, ok bool, err error)
	// Renew extends id's holding of role with the given term by ttl from now. It returns ErrNotHeld
	// (wrapped) when role is not held by id with that term.
	Renew(ctx context.Context, role, id string, term uint64, ttl time.Duration) error
	// Release gives role up if it is held by id with term, and tells waiting candidates. It returns
	// ErrNotHeld (wrapped) when it was not.
	Release(ctx context.Context, role, id string, term uint64) error
	// Leader reports who the backend believes holds role. A zero LeaderInfo.ID means nobody.
	Leader(ctx context.Context, role string) (LeaderInfo, error)
	// Close frees the backend's resources. It releases nothing explicitly; holdings end as the backend's
	// rules say (a Redis key expires; a PostgreSQL session lock ends with the session).
	Close() error
}

// Notifier is an optional Backend capability: a stream of hints that role was released, so a standby
// contends at once instead of at its next retry. The Elector finds it by type assertion; a Backend that
// wraps another (to record or inject faults) should forward it. Hints are only hints: a missed one costs
// at most RetryInterval.
type Notifier interface {
	// Subscribe returns a channel that receives a value (coalesced, best effort) each time role is
	// released. The subscription ends, and the channel is closed, when ctx ends.
	Subscribe(ctx context.Context, role string) (<-chan struct{}, error)
}

// LeaderInfo is the backend's view of a role's holder.
type LeaderInfo struct {
	// ID is the holder's instance ID; empty when nobody holds the role.
	ID string
	// Term is the holder's fencing token.
	Term uint64
	// TTL is how long the holding lasts without renewal, as the backend sees it.
	TTL time.Duration
	// Heartbeat is the backend's time of the holder's last acquire or renewal, when the backend records
	// it (zero otherwise).
	Heartbeat time.Time

	_ struct{}
}
