package chaos_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/internal/resp"
	"github.com/tenurelabs/tenure/internal/toxitest"
)

// Every link fault against a real redis-server through the embedded toxiproxy.
func TestEmbeddedLinkFaults(t *testing.T) {
	srv := redistest.Start(t)
	proxies := chaos.NewEmbedded(1)
	t.Cleanup(func() { require.NoError(t, proxies.Close()) })
	link, err := proxies.NewLink("i0", srv.Addr())
	require.NoError(t, err)
	exerciseLink(t, link, srv.Addr())
}

// The same faults through a real toxiproxy-server process (built from the toxiproxy module), driven
// over its HTTP API as --toxiproxy URL does.
func TestRemoteLinkFaults(t *testing.T) {
	srv := redistest.Start(t)
	url := toxitest.Start(t)
	proxies, err := chaos.NewRemote(url)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, proxies.Close()) })
	link, err := proxies.NewLink("i0", srv.Addr())
	require.NoError(t, err)
	exerciseLink(t, link, srv.Addr())
}

func TestRemoteWithoutServerSaysSo(t *testing.T) {
	port, err := redisserver.FreePort()
	require.NoError(t, err)
	_, err = chaos.NewRemote(fmt.Sprintf("http://127.0.0.1:%d", port))
	require.ErrorContains(t, err, "does not answer")
}

func exerciseLink(t *testing.T, link chaos.Link, redisAddr string) {
	t.Helper()
	srv := struct{ addr string }{redisAddr}

	timeout := 300 * time.Millisecond
	viaLink := redis.NewClient(&redis.Options{Addr: link.Addr(), ReadTimeout: timeout, WriteTimeout: timeout, DialTimeout: timeout,
		ContextTimeoutEnabled: true, MaxRetries: -1})
	direct := redis.NewClient(&redis.Options{Addr: srv.addr})
	t.Cleanup(func() { _ = viaLink.Close(); _ = direct.Close() })
	ctx := context.Background()
	require.NoError(t, viaLink.Ping(ctx).Err())

	t.Run("partition drops both ways", func(t *testing.T) {
		require.NoError(t, link.Partition())
		require.Error(t, viaLink.Set(ctx, "p", "1", 0).Err())
		require.Equal(t, int64(0), direct.Exists(ctx, "p").Val(), "a partitioned request must not arrive")
		require.NoError(t, link.Heal())
		require.Eventually(t, func() bool { return viaLink.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	})

	t.Run("one way: requests arrive, replies are lost", func(t *testing.T) {
		require.NoError(t, link.DropReplies())
		require.Error(t, viaLink.Set(ctx, "o", "1", 0).Err(), "the reply must be lost")
		require.Eventually(t, func() bool { return direct.Get(ctx, "o").Val() == "1" }, 2*time.Second, 10*time.Millisecond,
			"the request must have taken effect")
		require.NoError(t, link.Heal())
		require.Eventually(t, func() bool { return viaLink.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	})

	t.Run("latency delays round trips", func(t *testing.T) {
		slow := redis.NewClient(&redis.Options{Addr: link.Addr(), ReadTimeout: 5 * time.Second, MaxRetries: -1})
		t.Cleanup(func() { _ = slow.Close() })
		require.NoError(t, slow.Ping(ctx).Err())
		require.NoError(t, link.Latency(400*time.Millisecond, 0))
		start := time.Now()
		require.NoError(t, slow.Ping(ctx).Err())
		// A lower bound only: the toxic can add delay, never remove it.
		require.GreaterOrEqual(t, time.Since(start), 350*time.Millisecond)
		require.NoError(t, link.Heal())
	})

	t.Run("reset drops connections and keeps faults", func(t *testing.T) {
		require.NoError(t, viaLink.Ping(ctx).Err())
		require.NoError(t, link.Partition())
		require.NoError(t, link.Reset())
		require.Error(t, viaLink.Ping(ctx).Err(), "the partition survives a reset")
		require.NoError(t, link.Heal())
		require.Eventually(t, func() bool { return viaLink.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	})

	t.Run("kill is for good", func(t *testing.T) {
		require.NoError(t, link.Kill())
		require.Error(t, viaLink.Ping(ctx).Err())
		require.NoError(t, link.Heal())
		require.Error(t, viaLink.Ping(ctx).Err(), "a healed fault must not reopen a dead instance's link")
		require.NoError(t, link.Reset())
		require.Error(t, viaLink.Ping(ctx).Err())
	})
}

// During a one-way partition a connection opened after the fault began completes its handshake, so its
// command reaches Redis and takes effect, while the command's reply is lost.
func TestOneWayLetsHandshakesThrough(t *testing.T) {
	srv := redistest.Start(t)
	proxies := chaos.NewEmbedded(1)
	t.Cleanup(func() { require.NoError(t, proxies.Close()) })
	link, err := proxies.NewLink("i0", srv.Addr())
	require.NoError(t, err)
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = direct.Close() })
	ctx := context.Background()

	// The harness's client options (sim), with retries: each retry dials or reuses a connection.
	for _, retries := range []int{-1, 3} {
		t.Run(fmt.Sprintf("retries=%d", retries), func(t *testing.T) {
			require.NoError(t, link.DropReplies())
			t.Cleanup(func() { _ = link.Heal() })
			timeout := 300 * time.Millisecond
			c := redis.NewClient(&redis.Options{Addr: link.Addr(), DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
				ContextTimeoutEnabled: true, PoolSize: 8, MaxRetries: retries})
			t.Cleanup(func() { _ = c.Close() })
			key := fmt.Sprintf("fresh-%d", retries)
			err := c.Incr(ctx, key).Err()
			require.Error(t, err, "the reply must be lost")
			var ne interface{ Timeout() bool }
			require.ErrorAs(t, err, &ne, "the client must see a timeout, not a refused handshake")
			require.True(t, ne.Timeout())
			want := "1"
			if retries > 0 {
				// Every re-send landed: the handshake of each fresh connection went through.
				want = strconv.Itoa(retries + 1)
			}
			require.Eventually(t, func() bool { return direct.Get(ctx, key).Val() == want }, 2*time.Second, 10*time.Millisecond,
				"each request must have taken effect (got %q)", direct.Get(ctx, key).Val())
			require.NoError(t, link.Heal())
			require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
		})
	}
}

func embeddedLink(t *testing.T) (chaos.Link, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	proxies := chaos.NewEmbedded(1)
	t.Cleanup(func() { require.NoError(t, proxies.Close()) })
	link, err := proxies.NewLink("i0", srv.Addr())
	require.NoError(t, err)
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = direct.Close() })
	return link, direct
}

func linkClient(t *testing.T, link chaos.Link, timeout time.Duration) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: link.Addr(), DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Ping(context.Background()).Err())
	return c
}

// A held request lands after the client gave up on it, and a request sent on a fresh connection after
// the hold ended overtakes it.
func TestHeldRequestLandsAfterTheClientGaveUp(t *testing.T) {
	link, direct := embeddedLink(t)
	ctx := context.Background()
	old := linkClient(t, link, 200*time.Millisecond)
	const delay = 2 * time.Second

	require.NoError(t, link.Hold(true, delay, ""))
	sent := time.Now()
	err := old.Set(ctx, "k", "old", 0).Err()
	require.Error(t, err, "the client must give up before the request lands")
	require.NoError(t, link.EndHold())
	if time.Since(sent) < delay-500*time.Millisecond {
		require.Equal(t, int64(0), direct.Exists(ctx, "k").Val(), "the request must still be on the wire")
	}

	fresh := linkClient(t, link, time.Second)
	require.NoError(t, fresh.Set(ctx, "k", "new", 0).Err(), "after the hold ends, a new connection is not held")
	require.Eventually(t, func() bool { return direct.Get(ctx, "k").Val() == "old" }, 10*time.Second, 10*time.Millisecond,
		"the held request must land after the newer one")
	require.GreaterOrEqual(t, time.Since(sent), delay-50*time.Millisecond, "it lands no earlier than its delay")
	require.NoError(t, link.Heal())
}

// A held reply is delivered late: the command took effect at once, its reply comes after the delay.
func TestHeldReplyIsDeliveredLate(t *testing.T) {
	link, direct := embeddedLink(t)
	ctx := context.Background()
	c := linkClient(t, link, 10*time.Second)
	const delay = time.Second

	require.NoError(t, link.Hold(false, delay, ""))
	sent := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Set(ctx, "k", "v", 0).Err() }()
	require.Eventually(t, func() bool { return direct.Get(ctx, "k").Val() == "v" }, 5*time.Second, 5*time.Millisecond,
		"the request must take effect while its reply is held")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the held reply never came")
	}
	require.GreaterOrEqual(t, time.Since(sent), delay-50*time.Millisecond, "the reply must come no earlier than its delay")
	require.NoError(t, link.EndHold())
	require.NoError(t, link.Heal())
	start := time.Now()
	require.NoError(t, c.Ping(ctx).Err())
	require.Less(t, time.Since(start), delay, "a healed link is not held")
}

// With a match, only the requests that contain it are held; other connections flow.
func TestHoldOnlyMatchingRequests(t *testing.T) {
	link, direct := embeddedLink(t)
	ctx := context.Background()
	a := linkClient(t, link, 200*time.Millisecond)
	b := linkClient(t, link, time.Second)
	const delay = 2 * time.Second
	require.NoError(t, link.Hold(true, delay, "held-key"))
	sent := time.Now()
	require.Error(t, a.Set(ctx, "held-key", "1", 0).Err())
	require.NoError(t, b.Set(ctx, "free-key", "1", 0).Err(), "a request without the match is not held")
	if time.Since(sent) < delay-500*time.Millisecond {
		require.Equal(t, int64(0), direct.Exists(ctx, "held-key").Val(), "the matching request must still be on the wire")
	}
	require.Eventually(t, func() bool { return direct.Exists(ctx, "held-key").Val() == 1 }, 10*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(sent), delay-50*time.Millisecond)
	require.NoError(t, link.Heal())
}

// A match holds a command whatever the case its client sends it in: go-redis sends "expire", redis-py
// and most other clients "EXPIRE".
func TestHoldMatchesCommandsInAnyCase(t *testing.T) {
	link, direct := embeddedLink(t)
	ctx := context.Background()
	require.NoError(t, direct.Set(ctx, "k", "v", 0).Err())
	c := linkClient(t, link, 200*time.Millisecond)
	const delay = 2 * time.Second
	require.NoError(t, link.Hold(true, delay, "expire"))
	sent := time.Now()
	require.Error(t, c.Do(ctx, "EXPIRE", "k", "100").Err(), "an upper-case EXPIRE must be held past the client's timeout")
	require.Eventually(t, func() bool { return direct.TTL(ctx, "k").Val() > 0 }, 10*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(sent), delay-50*time.Millisecond, "it lands no earlier than its delay")
	require.NoError(t, link.Heal())
}

// ioredis holds its commands until the reply to its INFO ready check: during a one-way partition a
// connection it opens must get that reply, or its commands never reach Redis and the fault is a
// partition both ways for it.
func TestOneWayLetsAReadyCheckThrough(t *testing.T) {
	link, direct := embeddedLink(t)
	require.NoError(t, link.DropReplies())
	t.Cleanup(func() { _ = link.Heal() })
	conn, err := net.Dial("tcp", link.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	rd := resp.NewReader(resp.Limits{})
	read := func(wait time.Duration) (resp.Value, error) {
		buf := make([]byte, 64<<10)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
		for {
			if v, ok, err := rd.Next(); err != nil || ok {
				return v, err
			}
			n, err := conn.Read(buf)
			if err != nil {
				return resp.Value{}, err
			}
			rd.Feed(buf[:n])
		}
	}
	_, err = conn.Write(resp.AppendCommand(nil, "INFO", "persistence"))
	require.NoError(t, err)
	v, err := read(5 * time.Second)
	require.NoError(t, err, "the ready check's reply must come through")
	require.Contains(t, v.Str, "loading:0")
	_, err = conn.Write(resp.AppendCommand(nil, "INCR", "ready-checked"))
	require.NoError(t, err)
	_, err = read(300 * time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "the command's reply must be lost")
	require.True(t, ne.Timeout())
	require.Eventually(t, func() bool { return direct.Get(context.Background(), "ready-checked").Val() == "1" },
		2*time.Second, 10*time.Millisecond, "the command must have landed")
}
