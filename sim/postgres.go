package sim

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultPostgresURL is used when neither Options.Postgres nor $TENURE_PG_URL is set.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// pgTarget is the PostgreSQL a run's election instances use, with a table private to the run.
type pgTarget struct {
	url   *url.URL
	addr  string
	table string
	// admin is the harness's own connection, on which the lag monitor pings PostgreSQL (pingLag):
	// a starved server is the machine's lateness, not the election's.
	admin *pgx.Conn
	// pings counts pingLag's calls; every pgConnectEvery-th also opens a session (connects).
	pings, connects int
}

// pgConnectEvery is how often the lag ping also opens a new session: every fifth window (half a second
// at the monitor's 100 ms). A session costs the server a process, so not at every window.
const pgConnectEvery = 5

// pingLag is the lag monitor's ping of PostgreSQL (see lagPing); only the monitor's goroutine calls it.
// It does on the server what an election's renewal does: read the advisory locks (pg_locks) and commit a
// transaction that has an ID (txid_current), whose commit waits for the WAL flush. Under make test's load
// renewals timed out while a plain round trip on another connection answered at once: a ping that skips
// the renewal's work would not see why.
//
// Every pgConnectEvery-th ping also opens a session and closes it, as an elector does once its session
// dropped (after an outage, say): under load a new session waits for the server to start a process for
// it, and an election's reconnections timed out for 2 s after an outage while a query on a session
// already open answered within 102 ms (election-backend-outage-pg, in a campaign beside a compile).
func (p *pgTarget) pingLag(ctx context.Context) error {
	_, err := p.admin.Exec(ctx, "SELECT txid_current(), (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory')")
	if p.pings++; p.pings%pgConnectEvery != 0 || err != nil {
		return err
	}
	p.connects++
	conn, err := pgx.Connect(ctx, p.url.String())
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

func openPostgres(ctx context.Context, raw string, runID string) (*pgTarget, error) {
	if raw == "" {
		raw = os.Getenv("TENURE_PG_URL")
	}
	if raw == "" {
		raw = DefaultPostgresURL
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("sim: PostgreSQL URL %q: want postgres://user@host:port/db", raw)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, "5432"
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, raw)
	if err != nil {
		return nil, fmt.Errorf("sim: PostgreSQL at %s does not answer (%v): start it or set --postgres / TENURE_PG_URL", u.Host, err)
	}
	return &pgTarget{url: u, addr: net.JoinHostPort(host, port), table: "tenure_sim_" + runID, admin: conn}, nil
}

// urlVia returns the connection string with its host replaced by addr (an instance's proxy).
func (p *pgTarget) urlVia(addr string) string {
	u := *p.url
	u.Host = addr
	return u.String()
}

// close drops the run's table and its term sequence: the run leaves nothing behind.
func (p *pgTarget) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := p.admin // the lag monitor has stopped pinging on it (the teardown stops it first)
	defer conn.Close(ctx)
	ident := pgx.Identifier{p.table}.Sanitize()
	seq := pgx.Identifier{p.table + "_term_seq"}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+ident); err != nil {
		return fmt.Errorf("sim: drop run table %s: %w", p.table, err)
	}
	if _, err := conn.Exec(ctx, "DROP SEQUENCE IF EXISTS "+seq); err != nil {
		return fmt.Errorf("sim: drop run sequence: %w", err)
	}
	return nil
}
