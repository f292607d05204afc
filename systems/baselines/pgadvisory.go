package baselines

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenurelabs/tenure/sim"
)

func init() { sim.Register("pg-advisory", func() sim.System { return PGAdvisory{} }) }

// PGAdvisory models leader election on a PostgreSQL advisory lock with a lease row: a standby tries
// pg_try_advisory_lock every check interval (5 s in spec time, RenewInterval/2) and, when granted,
// writes its ID and lease_until = now() + TTL into the role's row and leads. The leader renews the row
// every check interval (UPDATE ... WHERE holder = its ID) and steps down only when that finds no row of
// its own. It never re-checks that its session still holds the lock: after a lost connection it
// reconnects — a new session, without the lock — and goes on renewing the row. Errors keep the current
// state until the next round. It has no local deadline and no fencing token. A model of a design for
// comparison, not for production.
type PGAdvisory struct{}

// Name implements sim.System.
func (PGAdvisory) Name() string { return "pg-advisory" }

// Description implements sim.Describer.
func (PGAdvisory) Description() string {
	return "baseline: a PostgreSQL advisory lock with a lease row, never re-checked after a reconnect"
}

// Kind reports an election history.
func (PGAdvisory) Kind() string { return "election" }

// UsesPostgres routes the instance's link to PostgreSQL.
func (PGAdvisory) UsesPostgres() bool { return true }

// NewInstance implements sim.System.
func (PGAdvisory) NewInstance(cfg sim.InstanceConfig) (sim.Instance, error) {
	if cfg.Postgres == nil {
		return nil, errors.New("pg-advisory needs a PostgreSQL (see --postgres)")
	}
	return &pgInstance{cfg: cfg, jit: newJitter(cfg.Seed)}, nil
}

type pgInstance struct {
	cfg    sim.InstanceConfig
	jit    *jitter
	stop   context.CancelFunc
	wg     sync.WaitGroup
	actors []*actor

	mu       sync.Mutex // one statement at a time on the session
	conn     *pgx.Conn
	stopping atomic.Bool
}

// lockKey is the advisory lock of a role, private to the run's table.
func (p *pgInstance) lockKey(role string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(p.cfg.Postgres.Table + ":" + role))
	return int64(h.Sum64())
}

func (p *pgInstance) table() string { return pgx.Identifier{p.cfg.Postgres.Table}.Sanitize() }

// session returns the connection, opening a new one when there is none or it is closed. Callers hold
// p.mu.
func (p *pgInstance) session(ctx context.Context) (*pgx.Conn, error) {
	if p.conn != nil && !p.conn.IsClosed() {
		return p.conn, nil
	}
	if p.conn != nil {
		_ = p.conn.Close(ctx)
		p.conn = nil
	}
	conn, err := pgx.Connect(ctx, p.cfg.Postgres.URL)
	if err != nil {
		return nil, err
	}
	p.conn = conn
	return conn, nil
}

// exec runs f on the session within one call timeout; a failed call drops the session so the next
// opens a new one.
func (p *pgInstance) exec(ctx context.Context, f func(ctx context.Context, c *pgx.Conn) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, p.cfg.Timing.OpTimeout)
	defer cancel()
	c, err := p.session(cctx)
	if err != nil {
		return err
	}
	if err := f(cctx, c); err != nil {
		if cctx.Err() != nil || c.IsClosed() {
			_ = c.Close(context.Background())
			p.conn = nil
		}
		return err
	}
	return nil
}

func (p *pgInstance) Start(ctx context.Context) error {
	ctx, p.stop = context.WithCancel(ctx)
	create := `CREATE TABLE IF NOT EXISTS ` + p.table() + ` (role text PRIMARY KEY, holder text NOT NULL, lease_until timestamptz NOT NULL)`
	for {
		err := p.exec(ctx, func(ctx context.Context, c *pgx.Conn) error { _, err := c.Exec(ctx, create); return err })
		if err == nil {
			break
		}
		// Several instances creating the table at once: one wins, the others see a duplicate.
		if ctx.Err() != nil {
			return err
		}
		if !sleepOn(p.cfg.Clock, ctx, p.jit.upTo(p.cfg.Timing.OpTimeout)) {
			return ctx.Err()
		}
	}
	every := p.cfg.Timing.RenewInterval / 2
	for _, role := range p.cfg.Targets {
		a := newActor(p.cfg, role)
		p.actors = append(p.actors, a)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for ctx.Err() == nil {
				p.round(ctx, a)
				if !sleepOn(p.cfg.Clock, ctx, p.jit.around(every)) {
					return
				}
			}
		}()
	}
	// A crash (ctx cancelled without Stop) leaves the session to the network cut; the connection object
	// is closed once the loops have exited, so nothing of the instance lingers.
	go func() {
		<-ctx.Done()
		p.wg.Wait()
		if p.stopping.Load() {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.conn != nil {
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = p.conn.Close(cctx)
			cancel()
			p.conn = nil
		}
	}()
	return nil
}

func (p *pgInstance) round(ctx context.Context, a *actor) {
	ttl := p.cfg.Timing.LeaseTTL.Seconds()
	if a.holds() {
		var n int64
		err := p.exec(ctx, func(ctx context.Context, c *pgx.Conn) error {
			tag, err := c.Exec(ctx, `UPDATE `+p.table()+` SET lease_until = now() + make_interval(secs => $3) WHERE role = $1 AND holder = $2`,
				a.target, p.cfg.ID, ttl)
			n = tag.RowsAffected()
			return err
		})
		if err == nil && n == 0 {
			a.end("lost")
		}
		return
	}
	var granted bool
	err := p.exec(ctx, func(ctx context.Context, c *pgx.Conn) error {
		if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, p.lockKey(a.target)).Scan(&granted); err != nil || !granted {
			return err
		}
		_, err := c.Exec(ctx, `INSERT INTO `+p.table()+` (role, holder, lease_until) VALUES ($1, $2, now() + make_interval(secs => $3))
			ON CONFLICT (role) DO UPDATE SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until`, a.target, p.cfg.ID, ttl)
		return err
	})
	if err == nil && granted {
		a.begin(ctx)
	}
}

func (p *pgInstance) Stop(ctx context.Context) error {
	if p.stop == nil {
		return nil
	}
	p.stopping.Store(true)
	p.stop()
	for _, a := range p.actors {
		if !a.holds() {
			continue
		}
		a.end("released")
		a.wait()
		_ = p.exec(ctx, func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, `SELECT pg_advisory_unlock($1)`, p.lockKey(a.target))
			return err
		})
	}
	err := waitGroup(ctx, &p.wg)
	p.mu.Lock()
	if p.conn != nil {
		_ = p.conn.Close(ctx)
		p.conn = nil
	}
	p.mu.Unlock()
	return err
}
