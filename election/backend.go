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
	// TryAcquire tries to make id the leader of role for ttl: a new holding, identified by (id, term). It
	// returns ok=false with a nil error when the role is held by someone else (or cannot yet be granted
	// safely). A re-sent request whose first attempt took effect must succeed with that holding's term.
	// A new call while an earlier holding of id exists must never hand that holding back as if it were
	// new: it is refused, or (when the backend can confirm the earlier holding) it becomes a new holding
	// with a new term, so a late renewal or release of the earlier one acts on nothing. A granted term is
	// greater than every term granted earlier for role.
	TryAcquire(ctx context.Context, role, id string, ttl time.Duration) (term uint64, ok bool, err error)
	// Renew extends the holding (id, term) of role by ttl from now. It returns ErrNotHeld (wrapped) when
	// role is not held by id with that term (a later holding of id included).
	Renew(ctx context.Context, role, id string, term uint64, ttl time.Duration) error
	// Release gives role up if it is held by id with term, and tells waiting candidates. It returns
	// ErrNotHeld (wrapped) when it was not; it never ends a later holding of id.
	Release(ctx context.Context, role, id string, term uint64) error
	// Leader reports who the backend believes holds role. A zero LeaderInfo.ID means nobody. A
	// candidate refused by TryAcquire schedules its next attempt from LeaderInfo.TTL (or Guard), so a
	// backend that can tell when the role may next be granted should report it there.
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
	// Guard is, when nobody holds the role but the backend grants it to nobody yet (the Redis
	// fresh-dataset guard), how long that lasts as the backend sees it; zero otherwise.
	Guard time.Duration

	_ struct{}
}
