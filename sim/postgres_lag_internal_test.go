package sim

import (
	"context"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/pgtest"
)

// The lag ping of PostgreSQL opens a session every pgConnectEvery-th window, as an elector does after
// its session dropped (and closes it); the others only query on the harness's own session.
func TestPostgresLagPingOpensASessionNowAndThen(t *testing.T) {
	t.Parallel()
	conn := pgtest.Connect(t)
	u, err := url.Parse(pgtest.URL())
	require.NoError(t, err)
	p := &pgTarget{url: u, admin: conn}
	ctx := context.Background()
	for range 2 * pgConnectEvery {
		require.NoError(t, p.pingLag(ctx))
	}
	require.Equal(t, 2, p.connects, "a session every %d pings", pgConnectEvery)

	p.url = &url.URL{Scheme: "postgres", User: url.User("postgres"), Host: "127.0.0.1:1", Path: "/test"}
	for range pgConnectEvery - 1 {
		require.NoError(t, p.pingLag(ctx))
	}
	require.Error(t, p.pingLag(ctx), "a session that cannot be opened fails the ping: the monitor counts the time it took")
}
