package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TryAcquire implements Backend: pg_try_advisory_lock on the role's session, then claim the visibility
// row unless another node's lease_until is still in the future (then unlock and report not acquired).
// The term is drawn with the lock, before the row is written, so that a write whose reply is lost can be
// undone by its term (see abandon).
func (b *PostgresBackend) TryAcquire(ctx context.Context, role, id string, ttl time.Duration) (uint64, bool, error) {
	r, done, err := b.role(ctx, role)
	if err != nil {
		return 0, false, err
	}
	defer done()
	if r.holder != "" && r.conn != nil && !r.conn.IsClosed() {
		// Session locks are re-entrant: never lock twice on one session. Another elector of this
		// process holding the role on the shared session is just another holder.
		if r.holder != id {
			return 0, false, nil
		}
		// What this session held last may be gone (the server ended the session, the row was taken
		// over): ask the server, never the cache. A confirmed holding becomes a new one with a new
		// term, so a late release or renewal of the earlier holding finds nothing to act on.
		term, ok, err := b.reissue(ctx, r, role, id, ttl)
		if err != nil || ok {
			return term, ok, err
		}
		b.drop(r) // the lock is not ours on this session: start from a clean one
	}
	conn, err := b.session(ctx, r, ttl)
	if err != nil {
		return 0, false, err
	}
	key := b.LockKey(role)
	var got bool
	var term int64
	err = conn.QueryRow(ctx, `SELECT got, CASE WHEN got THEN nextval('`+b.seq+`') ELSE 0 END
		FROM pg_try_advisory_lock($1) AS got`, key).Scan(&got, &term)
	if err != nil {
		// The lock may be held by the session being dropped: the close frees it.
		return 0, false, b.fail(ctx, r, "acquire", role, err)
	}
	if !got {
		return 0, false, nil
	}
	var granted int64
	err = conn.QueryRow(ctx, `INSERT INTO `+b.table+` (role, node, term, acquired_at, lease_until)
		SELECT $1, $2, $4, now(), now() + $3::bigint * interval '1 millisecond'
		WHERE NOT EXISTS (SELECT 1 FROM `+b.table+` WHERE role = $1 AND node <> $2 AND lease_until > now())
		ON CONFLICT (role) DO UPDATE SET node = EXCLUDED.node, term = EXCLUDED.term,
			acquired_at = EXCLUDED.acquired_at, lease_until = EXCLUDED.lease_until
		RETURNING term`, role, id, ttl.Milliseconds(), term).Scan(&granted)
	if errors.Is(err, pgx.ErrNoRows) {
		// The previous holder may act until its lease_until: not yet.
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", key); err != nil {
			return 0, false, b.fail(ctx, r, "acquire", role, err)
		}
		return 0, false, nil
	}
	if err != nil {
		// The row may have been written, and nobody will act on it: undo it.
		b.abandonLater(role, id, []uint64{uint64(term)}, conn.PgConn().PID(), ttl)
		return 0, false, b.fail(ctx, r, "acquire", role, err)
	}
	r.holder, r.term = id, uint64(granted)
	return r.term, true, nil
}

// reissue gives the holding of role that r's session has for id a new term and extends it by ttl, if
// the server confirms that the session still holds the lock and the row is still id's.
func (b *PostgresBackend) reissue(ctx context.Context, r *pgRole, role, id string, ttl time.Duration) (uint64, bool, error) {
	key := uint64(b.LockKey(role))
	var drawn, term int64
	if err := r.conn.QueryRow(ctx, `SELECT nextval('`+b.seq+`')`).Scan(&drawn); err != nil {
		return 0, false, b.failHeld(ctx, r, role, err, 0)
	}
	err := r.conn.QueryRow(ctx, `UPDATE `+b.table+` SET term = $7, acquired_at = now(),
			lease_until = now() + $4::bigint * interval '1 millisecond'
		WHERE role = $1 AND node = $2 AND term = $3 AND EXISTS (
			SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
			AND classid::bigint = $5 AND objid::bigint = $6 AND objsubid = 1)
		RETURNING term`,
		role, id, int64(r.term), ttl.Milliseconds(), int64(key>>32), int64(key&0xffffffff), drawn).Scan(&term)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, b.failHeld(ctx, r, role, err, uint64(drawn))
	}
	r.term = uint64(term)
	return r.term, true, nil
}

// failHeld drops r's session after a call of an acquire on it failed while it held the role: the new
// attempt has ended the earlier holding (see Backend.TryAcquire) and grants nothing, so what either
// left on the server, the earlier term and the new one if drawn, is undone.
func (b *PostgresBackend) failHeld(ctx context.Context, r *pgRole, role string, err error, drawn uint64) error {
	err = b.fail(ctx, r, "acquire", role, err)
	if l := r.lost; l != nil {
		r.lost = nil
		b.abandonLater(role, l.id, []uint64{l.term, drawn}, l.pid, l.ttl)
	}
	return err
}

// Renew implements Backend: extend lease_until only if this session still holds the role's lock.
func (b *PostgresBackend) Renew(ctx context.Context, role, id string, term uint64, ttl time.Duration) error {
	r, done, err := b.role(ctx, role)
	if err != nil {
		return err
	}
	defer done()
	if r.holder != id || r.term != term || r.conn == nil || r.conn.IsClosed() {
		return fmt.Errorf("%w: postgres renew role %q term %d by %q: session does not hold it", ErrNotHeld, role, term, id)
	}
	key := uint64(b.LockKey(role))
	tag, err := r.conn.Exec(ctx, `UPDATE `+b.table+` SET lease_until = now() + $4::bigint * interval '1 millisecond'
		WHERE role = $1 AND node = $2 AND term = $3 AND EXISTS (
			SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
			AND classid::bigint = $5 AND objid::bigint = $6 AND objsubid = 1)`,
		role, id, int64(term), ttl.Milliseconds(), int64(key>>32), int64(key&0xffffffff))
	if err != nil {
		return b.fail(ctx, r, "renew", role, err)
	}
	if tag.RowsAffected() != 1 {
		b.drop(r)
		return fmt.Errorf("%w: postgres renew role %q term %d by %q: lock or row gone", ErrNotHeld, role, term, id)
	}
	return nil
}

// Release implements Backend: delete the row, unlock, and NOTIFY the channel with the role. A holding
// whose session was dropped (a renewal or another call on it failed) is given up on a fresh connection
// (see abandon), and, if that cannot be done now, in the background.
func (b *PostgresBackend) Release(ctx context.Context, role, id string, term uint64) error {
	r, done, err := b.role(ctx, role)
	if err != nil {
		return err
	}
	defer done()
	if r.holder == id && r.term == term && r.conn != nil && r.conn.IsClosed() {
		b.drop(r)
	}
	if r.holder != id || r.term != term || r.conn == nil {
		if l := r.lost; l != nil && l.id == id && l.term == term {
			return b.giveUp(ctx, r, role)
		}
		return fmt.Errorf("%w: postgres release role %q term %d by %q", ErrNotHeld, role, term, id)
	}
	if _, err := r.conn.Exec(ctx, `DELETE FROM `+b.table+` WHERE role = $1 AND node = $2 AND term = $3`, role, id, int64(term)); err != nil {
		return b.failRelease(ctx, r, role, err)
	}
	var unlocked bool
	if err := r.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1), pg_notify($2, $3)`, b.LockKey(role), b.channel, role).Scan(&unlocked, nil); err != nil {
		return b.failRelease(ctx, r, role, err)
	}
	r.holder, r.term = "", 0
	if !unlocked {
		b.drop(r)
		return fmt.Errorf("%w: postgres release role %q term %d by %q: lock was not held", ErrNotHeld, role, term, id)
	}
	return nil
}

// giveUp undoes what r's dropped holding left on the server, now, or in the background if it cannot.
func (b *PostgresBackend) giveUp(ctx context.Context, r *pgRole, role string) error {
	l := r.lost
	r.lost = nil
	undone, err := b.abandon(ctx, role, l.id, []uint64{l.term}, l.pid)
	if err != nil {
		b.abandonLater(role, l.id, []uint64{l.term}, l.pid, l.ttl)
		return fmt.Errorf("election: postgres release role %q term %d by %q: %w", role, l.term, l.id, errors.Join(err, ctx.Err()))
	}
	if !undone {
		return fmt.Errorf("%w: postgres release role %q term %d by %q: gone with its session", ErrNotHeld, role, l.term, l.id)
	}
	return nil
}

// failRelease drops r's session after a call of Release on it failed, and gives the holding up in the
// background: its holder has stopped acting on it.
func (b *PostgresBackend) failRelease(ctx context.Context, r *pgRole, role string, err error) error {
	err = b.fail(ctx, r, "release", role, err)
	if l := r.lost; l != nil {
		r.lost = nil
		b.abandonLater(role, l.id, []uint64{l.term}, l.pid, l.ttl)
	}
	return err
}

// Leader implements Backend from the visibility table: a row whose lease_until has passed means nobody.
func (b *PostgresBackend) Leader(ctx context.Context, role string) (LeaderInfo, error) {
	r, done, err := b.role(ctx, role)
	if err != nil {
		return LeaderInfo{}, err
	}
	defer done()
	conn, err := b.session(ctx, r, 0)
	if err != nil {
		return LeaderInfo{}, err
	}
	var info LeaderInfo
	var term, leftMs int64
	err = conn.QueryRow(ctx, `SELECT node, term, (extract(epoch FROM lease_until - now()) * 1000)::bigint
		FROM `+b.table+` WHERE role = $1`, role).Scan(&info.ID, &term, &leftMs)
	if errors.Is(err, pgx.ErrNoRows) {
		return LeaderInfo{}, nil
	}
	if err != nil {
		return LeaderInfo{}, b.fail(ctx, r, "leader", role, err)
	}
	if leftMs <= 0 {
		return LeaderInfo{}, nil
	}
	info.Term, info.TTL = uint64(term), time.Duration(leftMs)*time.Millisecond
	return info, nil
}

// Subscribe implements Notifier: a connection of its own LISTENs on the channel (reconnecting after
// errors) and forwards notifications whose payload is role. The first connection is made before
// Subscribe returns, so an unreachable server is reported.
func (b *PostgresBackend) Subscribe(ctx context.Context, role string) (<-chan struct{}, error) {
	listen := func(ctx context.Context) (*pgx.Conn, error) {
		conn, err := b.connect(ctx, map[string]string{"idle_session_timeout": "0"})
		if err != nil {
			return nil, err
		}
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{b.channel}.Sanitize()); err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("election: postgres listen: %w", err)
		}
		return conn, nil
	}
	conn, err := listen(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(b.ctx, cancel)
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer stop()
		defer cancel()
		for {
			for conn != nil {
				n, err := conn.WaitForNotification(ctx)
				if err != nil {
					cctx, c := context.WithTimeout(context.Background(), time.Second)
					_ = conn.Close(cctx)
					c()
					conn = nil
					break
				}
				if n.Payload == role {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}
			t := time.NewTimer(500 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			conn, _ = listen(ctx)
			if conn != nil {
				// Releases may have been missed while disconnected.
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}

// Close implements Backend: it ends every role session (so their locks are freed by the server without
// deleting rows: a graceful release is the elector's Stop), every listener, and every undo still being
// retried in the background (see abandonLater).
func (b *PostgresBackend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	roles := b.roles
	b.mu.Unlock()
	b.cancel()
	var errs []error
	for _, r := range roles {
		r.sem <- struct{}{}
		if r.conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			errs = append(errs, r.conn.Close(ctx))
			cancel()
			r.conn = nil
		}
		<-r.sem
	}
	// Every call that could start an undo held its role's semaphore: all have returned.
	b.wg.Wait()
	return errors.Join(errs...)
}
