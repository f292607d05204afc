package election

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresOptions configure a PostgresBackend. The zero value is usable.
type PostgresOptions struct {
	// Table is the visibility table, optionally schema-qualified ("ops.leaders"). Created if missing,
	// with a sequence named Table+"_term_seq" for terms. Default "tenure_election".
	Table string
	// Channel is the LISTEN/NOTIFY channel that announces releases. Default: the table's name.
	Channel string
	// ApplicationName is shown in pg_stat_activity for the backend's sessions. Default "tenure-election".
	ApplicationName string

	_ struct{}
}

// PostgresBackend runs elections on PostgreSQL (14 or newer): a session advisory lock per role, held on a
// dedicated connection per role (never a pool: a session lock lives and dies with its session), and a
// visibility table
//
//	role text primary key, node text, term bigint, acquired_at timestamptz, lease_until timestamptz
//
// that says who leads until when, on the server's clock. Terms come from a sequence, so they increase per
// role across leaderships, restarts and crashes.
//
// Safety does not rest on the lock alone, since the server frees a session lock the moment it ends a
// session (pg_terminate_backend, a reset connection, a timeout) while the old holder may still be inside
// its local deadline. A candidate that gets the lock is granted the role only when the table shows no other
// node with lease_until in the future; otherwise it unlocks and waits. The holder's local deadline
// (request sent + TTL·(1-drift) - margin) ends before lease_until (server time at renewal + TTL), so at
// most one node acts at a time, assuming the clocks' rates err by less than the elector's DriftBound.
//
// Renewal re-checks in pg_locks that the session still holds the lock and extends lease_until; any error
// ends the connection (a new session is opened on the next call) and the leadership (fail closed).
// Graceful release deletes the row, unlocks and NOTIFYs Channel with the role as payload; standbys LISTEN
// on a connection of their own and contend at once.
//
// A write whose reply is lost (an acquire past its call bound, a renewal cut off) may have taken effect:
// a row naming an instance that does not act on it would keep every candidate out for up to a TTL. So an
// acquire that fails after it may have written, and a Release of a holding whose session was dropped, undo
// the write on a fresh connection (abandon): the old session is ended if it still holds the lock, the row
// of the write's term is deleted, and the channel is told. The term is drawn with the lock, before the row
// is written, so that a lost write can be found by its term.
//
// Dead-peer bound. Each role session is given, from the TTL it is used with:
// idle_session_timeout = 1.5·TTL (a client that stops talking, e.g. frozen or half-open, loses its
// session and lock within 1.5·TTL of its last call), tcp_keepalives_idle/interval/count =
// max(1s, TTL/3)/max(1s, TTL/6)/3 (a vanished peer on an idle connection is detected within
// idle + 3·interval), tcp_user_timeout = TTL (unacknowledged data), client_connection_check_interval =
// TTL/4, statement_timeout = idle_in_transaction_session_timeout = TTL. A lock can therefore outlive its
// holder's process by up to max(1.5·TTL, keepalive bound) plus the server's scheduling.
//
// Failover after a crash. A process that exits closes its sockets, and the server frees its locks at
// once: a standby then gets the lock, is refused by the row until lease_until (at most one TTL after the
// crash), reads lease_until from Leader and contends again 2 ms after it, so failover takes about TTL.
// When the holder's session outlives it (a frozen or partitioned process, a half-open connection, a
// process that lives on without its elector), the lock, not lease_until, is the limit: once lease_until
// has passed, Leader reports nobody, the standby tries once more at once and then every RetryInterval
// until the server ends the dead session, so failover is bounded by max(1.5·TTL, keepalive bound) +
// RetryInterval. The server publishes no moment at which it will end a session, so nothing better than
// retrying can be scheduled there.
//
// Not supported, because they break the argument above (see the package doc): a pooler in transaction
// or statement mode (PgBouncer pool_mode=transaction) between the backend and the server,
// synchronous_commit=off, and a server clock that steps.
type PostgresBackend struct {
	connCfg *pgx.ConnConfig
	table   string // sanitized identifier
	seq     string // sanitized identifier
	channel string
	appName string

	ctx    context.Context // ends on Close; bounds listeners and abandonLater
	cancel context.CancelFunc
	wg     sync.WaitGroup // abandonLater goroutines

	mu     sync.Mutex
	roles  map[string]*pgRole
	closed bool
}

// pgRole is the dedicated session of one role. sem serialises its use.
type pgRole struct {
	sem    chan struct{}
	conn   *pgx.Conn
	ttl    time.Duration // the TTL the session settings were made for
	holder string        // instance holding the role on this session ("" for none)
	term   uint64
	lost   *pgLost // the holding the last dropped session had, until Release gives it up
}

// NewPostgresBackend connects to connString (a URL or key=value string; host:port may be a proxy),
// creates the visibility table and sequence if missing, and returns the backend. Role sessions are opened
// on first use. An unreachable server gives an error wrapping ErrBackendUnavailable.
func NewPostgresBackend(ctx context.Context, connString string, opts PostgresOptions) (*PostgresBackend, error) {
	cc, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres connection string: %w", ErrInvalidConfig, err)
	}
	if opts.Table == "" {
		opts.Table = "tenure_election"
	}
	parts := strings.Split(opts.Table, ".")
	if opts.Channel == "" {
		opts.Channel = parts[len(parts)-1]
	}
	if opts.ApplicationName == "" {
		opts.ApplicationName = "tenure-election"
	}
	seqParts := append(append([]string{}, parts[:len(parts)-1]...), parts[len(parts)-1]+"_term_seq")
	bctx, cancel := context.WithCancel(context.Background())
	b := &PostgresBackend{
		connCfg: cc,
		table:   pgx.Identifier(parts).Sanitize(),
		seq:     pgx.Identifier(seqParts).Sanitize(),
		channel: opts.Channel,
		appName: opts.ApplicationName,
		ctx:     bctx, cancel: cancel,
		roles: make(map[string]*pgRole),
	}
	if err := b.setup(ctx); err != nil {
		cancel()
		return nil, err
	}
	return b, nil
}

// Table returns the sanitized name of the visibility table.
func (b *PostgresBackend) Table() string { return b.table }

func (b *PostgresBackend) where() string {
	return fmt.Sprintf("%s:%d/%s", b.connCfg.Host, b.connCfg.Port, b.connCfg.Database)
}

func (b *PostgresBackend) connect(ctx context.Context, params map[string]string) (*pgx.Conn, error) {
	cc := b.connCfg.Copy()
	cc.RuntimeParams["application_name"] = b.appName
	for k, v := range params {
		cc.RuntimeParams[k] = v
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres at %s: %w", ErrBackendUnavailable, b.where(), errors.Join(err, ctx.Err()))
	}
	return conn, nil
}

func (b *PostgresBackend) setup(ctx context.Context) error {
	conn, err := b.connect(ctx, nil)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// Concurrent CREATE ... IF NOT EXISTS can collide in the catalog; serialise them.
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey("\x00setup "+b.table)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+b.table+` (
			role text PRIMARY KEY, node text NOT NULL, term bigint NOT NULL,
			acquired_at timestamptz NOT NULL, lease_until timestamptz NOT NULL)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE SEQUENCE IF NOT EXISTS `+b.seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("election: postgres at %s: create %s: %w", b.where(), b.table, err)
	}
	return nil
}

// LockKey returns the advisory lock key of role on this backend: the FNV-1a 64 hash of the table and the
// role, stable across versions and processes. Advisory locks are database-wide, so the table is part of
// the key: two applications (or two test runs) with different tables never contend for one lock.
func (b *PostgresBackend) LockKey(role string) int64 { return lockKey(b.table + "/" + role) }

func lockKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("tenure/election/" + name))
	return int64(h.Sum64())
}

// role returns role's session slot, holding its semaphore; call the returned func to let go.
func (b *PostgresBackend) role(ctx context.Context, role string) (*pgRole, func(), error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, nil, ErrClosed
	}
	r, ok := b.roles[role]
	if !ok {
		r = &pgRole{sem: make(chan struct{}, 1)}
		b.roles[role] = r
	}
	b.mu.Unlock()
	select {
	case r.sem <- struct{}{}:
		return r, func() { <-r.sem }, nil
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("election: postgres role %q busy: %w", role, ctx.Err())
	}
}

// PostgresDeadPeerBound is how long the server may keep the advisory lock of a holder that is alive but
// silent (cut off, frozen, half-open) for a role with lease TTL ttl: the longer of the idle-session
// timeout (1.5·TTL) and the keepalive bound (idle + 3·interval, each whole seconds, at least one), the
// settings every role session is given. A standby that finds the lock still held tries again every
// RetryInterval, so its takeover may come that much later.
func PostgresDeadPeerBound(ttl time.Duration) time.Duration {
	secs := func(d time.Duration) time.Duration { return max(d.Truncate(time.Second), time.Second) }
	return max(ttl*3/2, secs(ttl/3)+3*secs(ttl/6))
}

// session returns r's connection, opening it if needed and making its settings fit ttl (0: keep).
func (b *PostgresBackend) session(ctx context.Context, r *pgRole, ttl time.Duration) (*pgx.Conn, error) {
	if r.conn == nil || r.conn.IsClosed() {
		r.holder, r.term, r.ttl = "", 0, 0
		conn, err := b.connect(ctx, nil)
		if err != nil {
			return nil, err
		}
		r.conn = conn
	}
	if ttl > 0 && ttl != r.ttl {
		ms := func(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }
		sec := func(d time.Duration) string { return strconv.FormatInt(max(int64(d/time.Second), 1), 10) }
		_, err := r.conn.Exec(ctx, `SELECT set_config('idle_session_timeout', $1, false),
			set_config('tcp_keepalives_idle', $2, false), set_config('tcp_keepalives_interval', $3, false),
			set_config('tcp_keepalives_count', '3', false), set_config('tcp_user_timeout', $4, false),
			set_config('client_connection_check_interval', $5, false), set_config('statement_timeout', $4, false),
			set_config('idle_in_transaction_session_timeout', $4, false)`,
			ms(ttl*3/2), sec(ttl/3), sec(ttl/6), ms(ttl), ms(ttl/4))
		if err != nil {
			b.drop(r)
			return nil, fmt.Errorf("election: postgres at %s: session settings: %w", b.where(), err)
		}
		r.ttl = ttl
	}
	return r.conn, nil
}

// drop ends r's session (which frees its locks on the server once the close reaches it) and remembers
// the holding it had, so that Release can still give it up.
func (b *PostgresBackend) drop(r *pgRole) {
	if r.holder != "" && r.conn != nil {
		r.lost = &pgLost{id: r.holder, term: r.term, pid: r.conn.PgConn().PID(), ttl: r.ttl}
	}
	if r.conn != nil {
		conn := r.conn
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = conn.Close(ctx)
		}()
	}
	r.conn, r.holder, r.term, r.ttl = nil, "", 0, 0
}

// fail drops r's session after err and returns err with context.
func (b *PostgresBackend) fail(ctx context.Context, r *pgRole, op, role string, err error) error {
	b.drop(r)
	return fmt.Errorf("election: postgres %s role %q: %w", op, role, errors.Join(err, ctx.Err()))
}

// SessionPID returns the server process ID of role's session, if one is open.
func (b *PostgresBackend) SessionPID(role string) (uint32, bool) {
	b.mu.Lock()
	r, ok := b.roles[role]
	b.mu.Unlock()
	if !ok {
		return 0, false
	}
	r.sem <- struct{}{}
	defer func() { <-r.sem }()
	if r.conn == nil || r.conn.IsClosed() {
		return 0, false
	}
	return r.conn.PgConn().PID(), true
}
