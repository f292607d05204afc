package election

import (
	"context"
	"fmt"
	"time"
)

// A write whose reply never came (a call that ran past its bound, a connection cut after the request
// went out) may have taken effect: the server may hold a row naming an instance that does not act on it,
// with lease_until up to a TTL away, and the session that wrote it may still hold the role's lock. Every
// other candidate would then be refused until both end, although nobody leads. Whoever dropped such a
// session knows the writer does not act on it (an acquire that failed grants nothing to its caller; a
// holding is released only once its holder stopped), so the backend undoes the write on a fresh
// connection: it ends the old session if it still holds the lock, deletes the row of the terms the write
// may have left, and, if either was there, NOTIFYs the channel so waiting candidates contend at once.

// pgLost is a holding whose session was dropped with it: what Release needs to give it up afterwards.
type pgLost struct {
	id   string
	term uint64
	pid  uint32 // the server process of the dropped session
	ttl  time.Duration
}

// Background undo attempts (abandonLater) are each bounded by TTL/abandonTryDiv, long enough for a
// connection and one statement on a slow server, short enough that one stuck behind a partition is
// followed by others well inside the row's TTL; between two, the pause is TTL/abandonPauseDiv.
const (
	abandonTryDiv   = 4
	abandonPauseDiv = 20
)

// abandon undoes, in one statement on a fresh connection, what the writes of id on role with terms may
// have left: the row of those terms, and the session pid if it still holds the role's lock (ended, and
// waited for, so that the lock is free when the candidates are told). It reports whether there was
// anything to undo. Only exact terms are deleted (each term is granted once), so a later holding of id
// is never touched. The session is ended only while the row names no other live holding: a process ID
// is reused only after its process is gone, and then a lock under that ID is someone else's.
func (b *PostgresBackend) abandon(ctx context.Context, role, id string, terms []uint64, pid uint32) (bool, error) {
	var ts []int64
	for _, t := range terms {
		if t != 0 {
			ts = append(ts, int64(t))
		}
	}
	conn, err := b.connect(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	wait := int64(time.Second / time.Millisecond)
	if dl, ok := ctx.Deadline(); ok {
		wait = max(time.Until(dl).Milliseconds(), 1)
	}
	key := uint64(b.LockKey(role))
	// Side effects are ordered by MATERIALIZED and CASE: pg_terminate_backend runs only for the row the
	// filters chose, never for a row the planner reaches before filtering.
	var n, notified int64
	err = conn.QueryRow(ctx, fmt.Sprintf(`WITH gone AS (
			DELETE FROM %[1]s WHERE role = $1 AND node = $2 AND term = ANY($3) RETURNING 1),
		holder AS MATERIALIZED (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $4
			AND classid::bigint = $5 AND objid::bigint = $6 AND objsubid = 1
			AND NOT EXISTS (SELECT 1 FROM %[1]s WHERE role = $1 AND lease_until > now()
				AND NOT (node = $2 AND term = ANY($3)))),
		ended AS MATERIALIZED (SELECT CASE WHEN pid = $4 THEN pg_terminate_backend(pid, $7) ELSE false END AS ok
			FROM holder),
		n AS MATERIALIZED (SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM ended WHERE ok) AS n)
		SELECT n, (SELECT count(*) FROM (SELECT pg_notify($8, $1) WHERE n > 0) AS s) FROM n`, b.table),
		role, id, ts, int64(pid), int64(key>>32), int64(key&0xffffffff), wait, b.channel).Scan(&n, &notified)
	if err != nil {
		return false, fmt.Errorf("election: postgres at %s: give up role %q terms %v of %q: %w", b.where(), role, terms, id, err)
	}
	return n > 0, nil
}

// abandonLater runs abandon in the background until it succeeds, the backend is closed, or nothing of the
// write can be left to undo: its row lasts at most ttl, its session at most the dead-peer bound.
func (b *PostgresBackend) abandonLater(role, id string, terms []uint64, pid uint32, ttl time.Duration) {
	if ttl <= 0 {
		return // a session always has the TTL of the holding it wrote; without one there is no bound
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(b.ctx, PostgresDeadPeerBound(ttl))
		defer cancel()
		for ctx.Err() == nil {
			actx, acancel := context.WithTimeout(ctx, ttl/abandonTryDiv)
			_, err := b.abandon(actx, role, id, terms, pid)
			acancel()
			if err == nil {
				return
			}
			t := time.NewTimer(ttl / abandonPauseDiv)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
	}()
}
