package election

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/pgtest"
)

// backendVia opens a backend whose sessions reach the server through a toxiproxy link of its own.
func (p *pgEnv) backendVia(t *testing.T) (*PostgresBackend, chaos.Link) {
	t.Helper()
	u, err := url.Parse(pgtest.URL())
	if err != nil || u.Host == "" {
		t.Skipf("PostgreSQL URL %q has no host:port to put a proxy in front of", pgtest.URL())
	}
	px := chaos.NewEmbedded(1)
	t.Cleanup(func() { _ = px.Close() })
	link, err := px.NewLink(pgtest.Name(t, "pg_link_"), u.Host)
	require.NoError(t, err)
	u.Host = link.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := NewPostgresBackend(ctx, u.String(), PostgresOptions{Table: p.table})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b, link
}

// A write whose reply never comes may have taken effect: the server can hold a row naming an instance
// that does not lead, and every other candidate is refused until its lease_until. The backend must undo
// such a write as soon as nobody can be acting on it, and say so on the channel, so that a standby takes
// over without waiting out the TTL. The replies are held (not dropped) far past the call bound, so the
// write lands and only its answer is late, as on a loaded machine.
func TestPostgresWriteWithoutReplyDoesNotKeepOthersOut(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second // lease_until of the lost write: the standby must not wait for it
	const call = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, b *PostgresBackend, link chaos.Link, role string)
	}{
		{"acquire", func(t *testing.T, b *PostgresBackend, link chaos.Link, role string) {
			require.NoError(t, link.Hold(false, 4*ttl, "INSERT 0 1"))
			ctx, cancel := context.WithTimeout(context.Background(), call)
			defer cancel()
			_, _, err := b.TryAcquire(ctx, role, "a", ttl)
			require.Error(t, err, "the INSERT's reply is held past the call bound")
		}},
		{"reissue", func(t *testing.T, b *PostgresBackend, link chaos.Link, role string) {
			_, ok, err := b.TryAcquire(context.Background(), role, "a", ttl)
			require.NoError(t, err)
			require.True(t, ok)
			require.NoError(t, link.Hold(false, 4*ttl, "UPDATE 1"))
			ctx, cancel := context.WithTimeout(context.Background(), call)
			defer cancel()
			_, _, err = b.TryAcquire(ctx, role, "a", ttl) // the session still holds it: a new term on the row
			require.Error(t, err, "the UPDATE's reply is held past the call bound")
		}},
		{"renew, then release", func(t *testing.T, b *PostgresBackend, link chaos.Link, role string) {
			term, ok, err := b.TryAcquire(context.Background(), role, "a", ttl)
			require.NoError(t, err)
			require.True(t, ok)
			require.NoError(t, link.Hold(false, 4*ttl, "UPDATE 1"))
			ctx, cancel := context.WithTimeout(context.Background(), call)
			defer cancel()
			require.Error(t, b.Renew(ctx, role, "a", term, ttl), "the UPDATE's reply is held past the call bound")
			// The elector releases a leadership it lost, once nothing acts on it any more.
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer rcancel()
			require.NoError(t, b.Release(rctx, role, "a", term), "the holding whose renewal went unanswered is given up")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPGEnv(t)
			slow, link := p.backendVia(t)
			standby := p.backend(t)
			role := uniqueRole(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hints, err := standby.Subscribe(ctx, role)
			require.NoError(t, err)

			tc.lose(t, slow, link, role)
			lost := time.Now()

			var term uint64
			require.Eventually(t, func() bool {
				got, ok, err := standby.TryAcquire(context.Background(), role, "b", ttl)
				require.NoError(t, err)
				if ok {
					term = got
					require.NoError(t, standby.Release(context.Background(), role, "b", got))
				}
				return ok
			}, ttl/2, 20*time.Millisecond, "the standby is refused as if the lost write's lease ran (TTL %s)", ttl)
			select {
			case <-hints:
			case <-time.After(ttl / 2):
				t.Fatalf("no release hint within %s of the lost write: a waiting standby is not woken", ttl/2)
			}
			t.Logf("standby acquired %s after the lost write (term %d)", time.Since(lost), term)
		})
	}
}
