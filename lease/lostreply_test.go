package lease

import (
	"bytes"
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// replyDropper loses the reply to the first request containing a marker, after the server has
// executed it: the client sees a broken connection and go-redis re-sends the request on a new one.
// A request marker (armRequest) loses the request itself instead: the connection breaks before it
// is written, so the server never runs it.
type replyDropper struct {
	mu       sync.Mutex
	markers  [][]byte // armed markers, each fires once
	requests [][]byte // armed request markers, each fires once
	dropped  [][]byte
	renews   int // requests seen carrying the renew script's hash
}

// armRequest loses the first request containing marker before it reaches the server.
func (d *replyDropper) armRequest(marker string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests = append(d.requests, []byte(marker))
}

func (d *replyDropper) renewCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.renews
}

func (d *replyDropper) arm(marker string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.markers = append(d.markers, []byte(marker))
}

func (d *replyDropper) droppedCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.dropped)
}

func (d *replyDropper) dialer(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &droppingConn{Conn: c, d: d}, nil
}

type droppingConn struct {
	net.Conn
	d    *replyDropper
	mu   sync.Mutex
	drop bool
}

func (c *droppingConn) Write(b []byte) (int, error) {
	c.d.mu.Lock()
	if bytes.Contains(b, []byte(renewScript.Hash())) {
		c.d.renews++
	}
	for i, m := range c.d.requests {
		if bytes.Contains(b, m) {
			c.d.requests = slices.Delete(c.d.requests, i, i+1)
			c.d.dropped = append(c.d.dropped, m)
			c.d.mu.Unlock()
			_ = c.Conn.Close()
			return 0, io.ErrClosedPipe
		}
	}
	for i, m := range c.d.markers {
		if bytes.Contains(b, m) {
			c.d.markers = slices.Delete(c.d.markers, i, i+1)
			c.d.dropped = append(c.d.dropped, m)
			c.mu.Lock()
			c.drop = true
			c.mu.Unlock()
			break
		}
	}
	c.d.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *droppingConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	drop := c.drop
	c.mu.Unlock()
	if !drop {
		return c.Conn.Read(b)
	}
	// Wait for the reply (so the command surely ran), then lose it with the connection.
	_, _ = c.Conn.Read(b)
	_ = c.Conn.Close()
	return 0, io.ErrUnexpectedEOF
}

func TestLostReplyThenRetryKeepsLease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	setup := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(ctx, setup, "poll:"))
	eps := endpoints(2)

	d := &replyDropper{}
	d.arm(acquireScript.Hash())
	log := newPollLog(10 * time.Millisecond)
	cfg := testConfig()
	cfg.InstanceID = "a"
	cfg.Targets = StaticTargets(eps)
	cfg.Poll = log.pollFunc("a")
	cfg.Observe = log.observe
	cfg.Logger = quietLogger()
	client := newClient(t, srv.Addr(), func(o *redis.Options) {
		o.Dialer = d.dialer
		o.MinRetryBackoff, o.MaxRetryBackoff = time.Millisecond, 5*time.Millisecond
	})
	m, err := New(client, cfg)
	require.NoError(t, err)
	mctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	require.NoError(t, m.Start(mctx))
	t.Cleanup(func() { _ = m.Stop(ctx) })

	require.Eventually(t, func() bool { return slices.Equal(m.Held(), eps) }, settle, 10*time.Millisecond)
	require.Equal(t, 1, d.droppedCount(), "the acquire's first reply was lost")
	evs := log.eventsFor("")
	require.Len(t, evs, 2, "each endpoint acquired once, on the re-sent request: %+v", evs)
	for _, e := range evs {
		require.Equal(t, EventAcquired, e.Kind)
		fence, err := setup.Get(ctx, "poll:fence:"+e.Endpoint).Uint64()
		require.NoError(t, err)
		require.Equal(t, fence, e.Token, "the retry returned the token of the grant whose reply was lost")
	}

	// Now lose a renewal's reply: the re-sent renewal confirms the lease, which is kept.
	d.arm(renewScript.Hash())
	require.Eventually(t, func() bool { return d.droppedCount() == 2 }, settle, 10*time.Millisecond)
	require.Equal(t, eps, m.Held())
	// Two more renewals: the lease must not have been given up in between.
	n := d.renewCount()
	require.Eventually(t, func() bool { return d.renewCount() >= n+2 }, settle, 10*time.Millisecond)
	require.Equal(t, eps, m.Held())
	require.Len(t, log.eventsFor(""), 2, "no loss and no re-acquisition: %+v", log.eventsFor(""))
}
