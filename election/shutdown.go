package election

import (
	"context"
	"errors"
	"fmt"
)

// Shutting down as services do: the context given to Start is cancelled (signal.NotifyContext on
// SIGINT or SIGTERM), then Stop is called.
//
// The context ending stops the elector at once: the leader context is cancelled and nothing more is
// sent. Nothing is released then, because a context alone cannot tell an orderly shutdown from a
// process going down, and a process that never calls Stop is treated as one that crashed: its holding
// expires (Redis) or ends with its session (PostgreSQL). What the run loop leaves on the backend is
// recorded instead, and a Stop that follows releases it — after the leadership's in-flight work, as a
// graceful Stop does — so a standby takes over within milliseconds, not a TTL later. The release is the
// backend's compare-and-delete on the instance and term, so a holding that has expired or passed to
// someone else meanwhile is left alone.

// leftover is what the end of Start's context left on the backend.
type leftover struct {
	l       *leadership // the leadership the context ended (its work may still be running), or nil
	term    uint64      // the term left held: of that leadership, or of a grant that arrived after the context ended; 0 if none
	unknown bool        // an acquire was in flight when the context ended: whether it took effect is unknown
}

// abandon records what the end of Start's context left behind, for Stop. Called by the run loop.
func (e *Elector) abandon(lo leftover) {
	e.mu.Lock()
	e.left = &lo
	e.mu.Unlock()
}

// releaseLeftover is the part of a Stop that follows the end of Start's context: it waits for the
// ended leadership's work (at most HandoffTimeout), then releases what was left held. An acquire whose
// outcome is unknown is settled by asking the backend who leads: a holding in this instance's name is
// one nothing here acts on. It runs once; a later Stop finds nothing left.
func (e *Elector) releaseLeftover(ctx context.Context) error {
	e.mu.Lock()
	lo := e.left
	e.left = nil
	e.mu.Unlock()
	if lo == nil || !e.releasesLeftover() {
		return nil
	}
	if lo.l != nil {
		e.drain(lo.l)
	}
	term := lo.term
	if term == 0 && lo.unknown {
		lctx, cancel := context.WithTimeout(ctx, e.cfg.OpTimeout)
		info, err := e.b.Leader(lctx, e.cfg.Role)
		cancel()
		if errors.Is(err, ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("election: stop role %q: ask whether the acquire in flight at cancellation took effect: %w", e.cfg.Role, err)
		}
		if info.ID != e.cfg.InstanceID {
			return nil
		}
		term = info.Term
	}
	if term == 0 {
		return nil
	}
	// ErrClosed: the backend was closed first, which ends what its sessions held (see Backend.Close).
	if err := e.releaseWithin(ctx, term); err != nil && !errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("election: stop role %q: release term %d: %w", e.cfg.Role, term, err)
	}
	return nil
}
