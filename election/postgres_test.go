package election

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/lagtest"
	"github.com/tenurelabs/tenure/internal/pgtest"
)

// pgEnv is a private visibility table on the shared PostgreSQL, dropped when the test ends.
type pgEnv struct {
	admin *pgx.Conn
	table string
}

func newPGEnv(t *testing.T) *pgEnv {
	t.Helper()
	admin := pgtest.Connect(t)
	table := pgtest.Name(t, "tenure_election_test_")
	pgtest.Drop(t, admin, "DROP TABLE IF EXISTS "+table, "DROP SEQUENCE IF EXISTS "+table+"_term_seq")
	return &pgEnv{admin: admin, table: table}
}

// backend opens a backend of its own (its own sessions: a separate process, as far as the server knows).
func (p *pgEnv) backend(t *testing.T) *PostgresBackend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := NewPostgresBackend(ctx, pgtest.URL(), PostgresOptions{Table: p.table})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// pgPing is a lag watch's ping of the shared server, on a connection of its own, doing on the server what
// a renewal does: read the advisory locks (pg_locks) and commit (txid_current gives the transaction an
// ID, so its commit waits for the WAL flush). Under make test's load, renewals timed out at 300 ms while
// a plain round trip answered within 100 ms: a ping that skips the renewal's work would not see why.
func pgPing(t *testing.T) lagtest.Ping {
	conn := pgtest.Connect(t)
	return lagtest.Ping{Name: "PostgreSQL (a renewal's work: pg_locks and a commit)", Do: func(ctx context.Context) error {
		_, err := conn.Exec(ctx, "SELECT txid_current(), (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory')")
		return err
	}}
}

func pgFleet(t *testing.T, p *pgEnv, n int, tweak func(*Config)) (*fleet, []*PostgresBackend) {
	role := uniqueRole(t)
	bs := make([]*PostgresBackend, n)
	for i := range bs {
		bs[i] = p.backend(t)
	}
	f := newFleet(t, n,
		func(i int) Backend { return bs[i] },
		func(i int) Config {
			cfg := testConfig(t, role, fmt.Sprintf("n%d", i), uint64(i+1))
			if tweak != nil {
				tweak(&cfg)
			}
			return cfg
		})
	return f, bs
}

func TestPostgresSingleLeaderVisibleAndGracefulHandoff(t *testing.T) {
	t.Parallel()
	p := newPGEnv(t)
	f, _ := pgFleet(t, p, 3, func(c *Config) { c.RetryInterval = testTTL })
	f.start(t)
	l := f.leader(t, 3*time.Second)
	first, _ := f.nextStart(t, time.Second)
	watch := lagtest.Start(t, pgPing(t))

	var node string
	var term int64
	var left time.Duration
	err := p.admin.QueryRow(context.Background(),
		"SELECT node, term, lease_until - now() FROM "+p.table+" WHERE role = $1", f.es[l].Role()).Scan(&node, &term, &left)
	require.NoError(t, err)
	require.Equal(t, f.es[l].ID(), node)
	require.Equal(t, first, uint64(term))
	require.Positive(t, left)
	// The heartbeat keeps a healthy leader in place. Two leaders is a safety violation, whatever the
	// machine's load. A lost leadership is one only if the server answered in time: a renewal that takes
	// longer than OpTimeout ends leadership by design (fail closed), so when the test's own pings or
	// timers ran a third of that late the premise "healthy" did not hold and the test is inconclusive.
	for end := time.Now().Add(2 * testTTL); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		n := len(leaders(f.es))
		require.LessOrEqual(t, n, 1, "two electors lead at once")
		if n == 0 || !f.es[l].IsLeader() {
			for wait := time.Now().Add(testTTL); len(f.rec.lossesSoFar()) == 0 && time.Now().Before(wait); {
				time.Sleep(time.Millisecond) // the Lost event, which says why, trails the state change
			}
			watch.Excuse(t, testOp/3, "the heartbeat did not keep a healthy leader in place (%d electors lead; %v)", n, f.rec.lossesSoFar())
			t.Fatalf("the heartbeat did not keep a healthy leader in place: %d electors lead, the first leader leads: %v; %v",
				n, f.es[l].IsLeader(), f.rec.lossesSoFar())
		}
	}

	require.Eventually(t, func() bool {
		return f.es[(l+1)%3].Leader() == f.es[l].ID() && f.es[(l+2)%3].Leader() == f.es[l].ID()
	}, 2*testTTL, 5*time.Millisecond)
	stopped := time.Now()
	require.NoError(t, f.es[l].Stop(context.Background()))
	next, at := f.nextStart(t, 2*testTTL)
	t.Logf("graceful handoff: %s", at.Sub(stopped))
	require.Greater(t, next, first)
	if at.Sub(stopped) >= testTTL/4 {
		watch.ExcuseLate(t, testTTL/8, at.Sub(stopped)-testTTL/4, "graceful handoff took %s", at.Sub(stopped))
		t.Fatalf("graceful handoff took %s: LISTEN/NOTIFY makes the standby lead well within a quarter TTL (%s)", at.Sub(stopped), testTTL/4)
	}
	f.finish(t)

	var rows int
	require.NoError(t, p.admin.QueryRow(context.Background(), "SELECT count(*) FROM "+p.table).Scan(&rows))
	require.Zero(t, rows, "graceful stop deletes the row")
}

func TestPostgresTerminatedSessionEndsLeadershipBeforeDeadline(t *testing.T) {
	t.Parallel()
	p := newPGEnv(t)
	f, bs := pgFleet(t, p, 2, nil)
	f.start(t)
	l := f.leader(t, 3*time.Second)
	first, _ := f.nextStart(t, time.Second)
	pid, ok := bs[l].SessionPID(f.es[l].Role())
	require.True(t, ok)
	var holder int64
	require.NoError(t, p.admin.QueryRow(context.Background(),
		"SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid::bigint = $1 AND objid::bigint = $2",
		int64(uint64(bs[l].LockKey(f.es[l].Role()))>>32), int64(uint64(bs[l].LockKey(f.es[l].Role()))&0xffffffff)).Scan(&holder))
	require.Equal(t, int64(pid), holder, "the leader's session holds the advisory lock")

	var killed bool
	require.NoError(t, p.admin.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", int64(pid)).Scan(&killed))
	require.True(t, killed)
	killedAt := time.Now()
	require.Eventually(t, func() bool { return !f.es[l].IsLeader() }, f.es[l].cfg.validity(), time.Millisecond,
		"leadership ends before the local deadline")
	t.Logf("leadership ended %s after pg_terminate_backend (validity %s)", time.Since(killedAt), f.es[l].cfg.validity())

	term, at := f.nextStart(t, 2*testTTL+2*time.Second)
	t.Logf("re-acquired %s after pg_terminate_backend", at.Sub(killedAt))
	require.Greater(t, term, first)
	f.finish(t) // the standby that got the freed lock waited for the old lease_until
}

func TestPostgresCrashFailsOver(t *testing.T) {
	t.Parallel()
	p := newPGEnv(t)
	f, bs := pgFleet(t, p, 3, nil)
	f.start(t)
	l := f.leader(t, 3*time.Second)
	first, _ := f.nextStart(t, time.Second)
	// A crashed process releases nothing and its sockets close: cancel, then close its backend.
	crashed := time.Now()
	f.cancels[l]()
	require.NoError(t, bs[l].Close())
	term, at := f.nextStart(t, 2*testTTL+2*time.Second)
	t.Logf("failover after crash: %s", at.Sub(crashed))
	require.Greater(t, term, first)
	require.Less(t, at.Sub(crashed), testTTL+testRetry+time.Second, "failover within TTL + RetryInterval + 1s tolerance")
	f.finish(t)
}

func TestPostgresRunOnceAndUnreachableServer(t *testing.T) {
	t.Parallel()
	p := newPGEnv(t)
	b := p.backend(t)
	cfg := testConfig(t, uniqueRole(t), "once", 1)
	var got uint64
	ran, err := RunOnce(context.Background(), b, cfg, func(ctx context.Context, term uint64) error {
		got = term
		info, err := b.Leader(ctx, cfg.Role)
		require.NoError(t, err)
		require.Equal(t, "once", info.ID)
		return nil
	})
	require.NoError(t, err)
	require.True(t, ran)
	require.NotZero(t, got)
	info, err := b.Leader(context.Background(), cfg.Role)
	require.NoError(t, err)
	require.Empty(t, info.ID)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = NewPostgresBackend(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=1", PostgresOptions{})
	require.ErrorIs(t, err, ErrBackendUnavailable)
	require.Contains(t, err.Error(), "127.0.0.1:1")
}

func TestPostgresFreedLockIsNotGrantedBeforeLeaseUntil(t *testing.T) {
	t.Parallel()
	p := newPGEnv(t)
	b1, b2 := p.backend(t), p.backend(t)
	ctx := context.Background()
	role := uniqueRole(t)
	ttl := time.Second

	t1, ok, err := b1.TryAcquire(ctx, role, "a", ttl)
	require.NoError(t, err)
	require.True(t, ok)
	again, ok, err := b1.TryAcquire(ctx, role, "a", ttl)
	require.NoError(t, err)
	require.True(t, ok, "the server confirms the holder's session still holds the lock")
	require.Greater(t, again, t1, "a new attempt is a new holding")
	require.ErrorIs(t, b1.Renew(ctx, role, "a", t1, ttl), ErrNotHeld, "the earlier holding is over")
	t1 = again
	_, ok, err = b2.TryAcquire(ctx, role, "b", ttl)
	require.NoError(t, err)
	require.False(t, ok, "the lock is held")

	// The server ends the holder's session: the lock is free at once, but "a" may act until lease_until.
	var oldUntil time.Time
	require.NoError(t, p.admin.QueryRow(ctx, "SELECT lease_until FROM "+b1.Table()+" WHERE role = $1", role).Scan(&oldUntil))
	pid, _ := b1.SessionPID(role)
	_, err = p.admin.Exec(ctx, "SELECT pg_terminate_backend($1)", int64(pid))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, p.admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int64(pid)).Scan(&n))
		return n == 0
	}, 2*time.Second, 5*time.Millisecond, "terminated session gone")
	freed := time.Now()
	_, ok, err = b2.TryAcquire(ctx, role, "b", ttl)
	require.NoError(t, err)
	require.False(t, ok, "a freed lock is not granted while the old lease runs")
	var locks int
	require.NoError(t, p.admin.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid::bigint = $1",
		int64(uint64(b1.LockKey(role))&0xffffffff)).Scan(&locks))
	require.Zero(t, locks, "the waiting candidate does not keep the lock")
	require.Error(t, b1.Renew(ctx, role, "a", t1, ttl), "the old holder's heartbeat cannot confirm")

	var t2 uint64
	require.Eventually(t, func() bool {
		t2, ok, err = b2.TryAcquire(ctx, role, "b", ttl)
		require.NoError(t, err)
		return ok
	}, 3*ttl, 20*time.Millisecond)
	// Judged on the server's clock, which set both: however late this test ran (terminating the session
	// and seeing it gone may take most of the lease on a loaded machine), the grant came no earlier than
	// the old holding's lease_until.
	var granted time.Time
	require.NoError(t, p.admin.QueryRow(ctx, "SELECT acquired_at FROM "+b1.Table()+" WHERE role = $1", role).Scan(&granted))
	require.False(t, granted.Before(oldUntil), "granted at %v, before the old lease ran out at %v (%v after the lock was freed)", granted, oldUntil, time.Since(freed))
	require.Greater(t, t2, t1)
	require.ErrorIs(t, b1.Release(ctx, role, "a", t1), ErrNotHeld)
	require.NoError(t, b2.Release(ctx, role, "b", t2))
}

// TryAcquire by the instance that holds the role on this session must ask the server: the session (and
// with it the lock) may have ended since.
func TestPostgresTryAcquireAsksTheServerNotTheCache(t *testing.T) {
	t.Parallel()
	p := newPGEnv(t)
	b := p.backend(t)
	ctx := context.Background()
	role := uniqueRole(t)
	ttl := time.Second
	_, ok, err := b.TryAcquire(ctx, role, "a", ttl)
	require.NoError(t, err)
	require.True(t, ok)

	pid, _ := b.SessionPID(role)
	_, err = p.admin.Exec(ctx, "SELECT pg_terminate_backend($1)", int64(pid))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, p.admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int64(pid)).Scan(&n))
		return n == 0
	}, 2*time.Second, 5*time.Millisecond, "terminated session gone")

	term, ok, err := b.TryAcquire(ctx, role, "a", ttl)
	if err == nil && ok {
		// Granted again: then the server must say so, on a live session holding the lock.
		var locks int
		require.NoError(t, p.admin.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN `+p.table+` r ON r.role = $1
			WHERE l.locktype = 'advisory' AND l.granted AND l.objid::bigint = $2 AND r.term = $3`,
			role, int64(uint64(b.LockKey(role))&0xffffffff), int64(term)).Scan(&locks))
		require.Equal(t, 1, locks, "success reported for a lock the server does not hold (term %d)", term)
	}
}

// Ten electors started at once, each with its own sessions, on a server that is slow to accept them:
// OpTimeout is cut so short that a first attempt to open a session may time out. Start rides it out.
func TestPostgresTenElectorsStartAtOnce(t *testing.T) {
	t.Parallel()
	p := newPGEnv(t)
	role := uniqueRole(t)
	reg := prometheus.NewRegistry()
	es := make([]*Elector, 10)
	for i := range es {
		cfg := testConfig(t, role, fmt.Sprintf("n%d", i), uint64(i+1))
		cfg.OpTimeout = 100 * time.Millisecond
		cfg.Registerer = reg
		e, err := New(p.backend(t), cfg)
		require.NoError(t, err)
		es[i] = e
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
	defer scancel()
	var wg sync.WaitGroup
	errs := make([]error, len(es))
	for i, e := range es {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.Start(sctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "elector %d", i)
	}
	t.Logf("start retries: %g", metricValue(t, reg, "tenure_election_start_retries_total", role))
	stopAll(t, es)
}
