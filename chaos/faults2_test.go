package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
)

// sessionsEnv is a fakeEnv whose sessions and backend record what faults do to them.
type sessionsEnv struct {
	fakeEnv
	backend chaos.Backend
}

func (e *sessionsEnv) Sessions() chaos.Sessions { return recordingSessions{&e.fakeEnv} }
func (e *sessionsEnv) Backend() chaos.Backend   { return e.backend }

type recordingSessions struct{ e *fakeEnv }

func (s recordingSessions) Add(_ context.Context, id string) error { s.e.log("add " + id); return nil }
func (s recordingSessions) Pause(_ context.Context, id string) error {
	s.e.log("pause " + id)
	return nil
}
func (s recordingSessions) Resume(_ context.Context, id string) error {
	s.e.log("resume " + id)
	return nil
}
func (s recordingSessions) Remove(_ context.Context, id string) error {
	s.e.log("remove " + id)
	return nil
}
func (s recordingSessions) Restore(context.Context) error { s.e.log("restore"); return nil }
func (s recordingSessions) IDs() []string                 { return []string{"ep-0"} }

// A flap without a duration pauses and resumes the session within one step; with one, it resumes when
// the step ends.
func TestSessionFlap(t *testing.T) {
	for _, st := range []chaos.Step{{At: 0, Fault: chaos.SessionChange{Change: "flap", ID: "ep-0"}},
		{At: 0, For: time.Millisecond, Fault: chaos.SessionChange{Change: "flap", ID: "ep-0"}}} {
		env := &sessionsEnv{}
		var recs []chaos.Record
		r := chaos.Runner{Env: env, Now: func() time.Duration { return 0 },
			Sleep:   func(context.Context, time.Duration) bool { return true },
			OnEnd:   func(rec chaos.Record) { recs = append(recs, rec) },
			OnApply: nil}
		require.NoError(t, r.Run(context.Background(), chaos.Schedule{st}))
		require.Equal(t, []string{"pause ep-0", "resume ep-0"}, env.calls)
		require.Len(t, recs, 1)
		require.False(t, recs[0].IsFault, "a session flap is an operation, not a fault")
	}
	require.NoError(t, chaos.Validate(chaos.Schedule{{At: 1, Fault: chaos.SessionChange{Change: "flap", ID: "ep-0"}}}, 1, []string{"ep-0"}))
	require.Error(t, chaos.Validate(chaos.Schedule{{At: 1, Fault: chaos.SessionChange{Change: "flap", ID: "nope"}}}, 1, []string{"ep-0"}))
}

// The persistence faults refuse a backend without the persistence they need, and say which to use.
func TestPersistenceFaultsNeedTheirBackend(t *testing.T) {
	env := &sessionsEnv{backend: plainBackend{}}
	for f, want := range map[chaos.Fault]string{
		chaos.RedisRestartFromSnapshot{}: "--redis server:rdb",
		chaos.RedisRestartAOF{}:          "--redis server:aof",
	} {
		_, _, err := f.Apply(context.Background(), env)
		require.ErrorIs(t, err, chaos.ErrUnsupported)
		require.ErrorContains(t, err, want)
	}
}

// plainBackend is a deployment without persistence; every verb the faults must not reach panics.
type plainBackend struct{ deploy.Deployment }

func (plainBackend) About() deploy.About { return deploy.About{Persistence: "none"} }

// Slow faults scale their delay with the schedule.
func TestSlowFaultsScale(t *testing.T) {
	s := chaos.Schedule{
		{At: 10 * time.Second, For: 5 * time.Second, Fault: chaos.SlowRequests{Slot: 0, Delay: 45 * time.Second}},
		{At: 10 * time.Second, For: 5 * time.Second, Fault: chaos.SlowReplies{Of: "ep-0", Delay: 45 * time.Second}},
	}.Scale(0.1)
	require.Equal(t, 4500*time.Millisecond, s[0].Fault.(chaos.SlowRequests).Delay)
	require.Equal(t, 4500*time.Millisecond, s[1].Fault.(chaos.SlowReplies).Delay)
	require.Contains(t, s[1].String(), `"delay":"4.5s"`)
}
