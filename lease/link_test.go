package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
)

func TestLinkFailureClassification(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	c := newClient(t, mr.Addr())
	reply := c.Do(context.Background(), "NOSUCHCOMMAND").Err()
	require.Error(t, reply)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"redis.Nil", redis.Nil, false},
		{"error reply", reply, false},
		{"wrapped error reply", fmt.Errorf("acquire: %w", reply), false},
		{"deadline", context.DeadlineExceeded, true},
		{"eof", io.EOF, true},
		{"network", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, true},
		{"closed client", redis.ErrClosed, true},
	} {
		require.Equal(t, tc.want, linkFailure(tc.err), tc.name)
	}
}

// Stop on an instance whose replies are lost still sends its clean-up, and returns within a bound.
func TestStopWhileUnhealthyIsBounded(t *testing.T) {
	t.Parallel()
	f, srv, eps := realFleet(t, 3)
	proxies := chaos.NewEmbedded(2)
	t.Cleanup(func() { _ = proxies.Close() })
	link, err := proxies.NewLink("lease-s", srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Heal() })
	reg := prometheus.NewRegistry()
	f.cfg.Registerer = reg
	cfg := f.cfg
	rec := &cmdRecorder{}
	m := f.startAt("s", link.Addr(), rec)
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)

	require.NoError(t, link.DropReplies())
	require.Eventually(t, func() bool { return instanceValue(t, reg, "tenure_lease_link_healthy", "s") == 0 },
		cfg.HeartbeatInterval+cfg.OpTimeout+5*time.Second, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	f.mu.Lock()
	delete(f.members, "s")
	f.mu.Unlock()
	err = m.Stop(ctx)
	took := time.Since(began)
	require.Error(t, err, "no reply came back")
	// In-flight polls (20ms) finish, then two OpTimeouts bound the clean-up (the heartbeat delete and
	// the releases side by side, then the stop announcement); 1s of scheduling slack.
	require.Less(t, took, 2*cfg.OpTimeout+time.Second)
	rec.mu.Lock()
	sentDel := false
	for _, c := range rec.cmds {
		sentDel = sentDel || (c.name == "del" && !c.start.Before(began))
	}
	rec.mu.Unlock()
	require.True(t, sentDel, "Stop still tries to delete its heartbeat")
	t.Logf("Stop while unhealthy returned after %s: %v", took, err)
}
