package sim

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// A held instance's calls neither answer nor fail, whatever their contexts say, until the hold ends.
func TestHeldCallsBlockUntilReleased(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for name, hold := range map[string]func(in *vinstance){
		"stall": func(in *vinstance) { in.stall.freeze() },
		"pause": func(in *vinstance) { in.calls.freeze() },
	} {
		t.Run(name, func(t *testing.T) {
			in := newTestInstance()
			rec := history.NewRecorderFrom(time.Now())
			c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = c.Close() })
			c.AddHook(&recordingHook{instance: in.id, rec: rec, hold: in.hold})
			require.NoError(t, c.Ping(context.Background()).Err())

			hold(in)
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				done <- c.Set(ctx, "k", "v", 0).Err()
			}()
			require.Never(t, func() bool { return len(done) > 0 }, 200*time.Millisecond, time.Millisecond,
				"a held call must not fail fast, even after its context ended")
			in.stall.thaw()
			in.calls.thaw()
			select {
			case err := <-done:
				require.ErrorIs(t, err, context.DeadlineExceeded, "the call's context ended while it was held")
			case <-time.After(10 * time.Second):
				t.Fatal("the call stayed blocked after the hold ended")
			}
			require.NoError(t, c.Set(context.Background(), "k", "v", 0).Err(), "calls go on after the hold")
		})
	}
}

// A reply that arrives while the instance is held is handed back only when the hold ends, and then it
// is the reply: the call took effect.
func TestReplyArrivingDuringAHoldIsSeenAfterIt(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rec := history.NewRecorderFrom(time.Now())
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Ping(context.Background()).Err()) // dial before the hook counts holds
	replied := make(chan struct{})
	release := make(chan struct{})
	calls := 0
	c.AddHook(&recordingHook{instance: "i0", rec: rec, hold: func() {
		calls++
		if calls == 2 { // the second hold of the first call: its reply is in
			close(replied)
			<-release
		}
	}})
	done := make(chan error, 1)
	go func() { done <- c.Set(context.Background(), "k", "v", 0).Err() }()
	<-replied
	other := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = other.Close() })
	got, err := other.Get(context.Background(), "k").Result()
	require.NoError(t, err)
	require.Equal(t, "v", got, "the held call's effect is already in Redis")
	require.Never(t, func() bool { return len(done) > 0 }, 100*time.Millisecond, time.Millisecond)
	close(release)
	require.NoError(t, <-done)
}
