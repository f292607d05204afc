package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

// A paused instance makes no progress: its own timers must not end its belief while it is frozen. It
// wakes believing what it believed, sends the poll it was about to send, and only then finds out (its
// clock has jumped past the deadline).
func TestPausedReferenceKeepsItsBeliefUntilItWakes(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	sc := sim.Scenario{
		Name: "pause-is-a-pause", Instances: 2, Endpoints: 2, Duration: 140 * time.Second, Fencing: true,
		// Two TTLs: far past the paused holder's local deadline and its lease in Redis.
		Steps: chaos.Schedule{{At: 60 * time.Second, For: 60 * time.Second, Jitter: -1, Fault: chaos.Pause{Of: "ep-0"}}},
	}
	res, err := sim.Run(context.Background(), sim.Options{System: reference.NewReference(), Scenario: sc, Seed: 1, TimeScale: 0.1, Backend: "server"})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors)
	h := res.History

	var paused string
	var from, to time.Duration
	for _, e := range h.Events {
		if e.Kind != history.KindLifecycle {
			continue
		}
		switch e.Lifecycle.Change {
		case history.LifePaused:
			paused, from = e.Instance, e.At
		case history.LifeResumed:
			to = e.At
		}
	}
	require.NotEmpty(t, paused, "the holder of ep-0 was paused")
	require.Greater(t, to, from)

	heldAtPause, endedAfterWaking := false, false
	var token uint64
	for _, e := range h.Events {
		if e.Kind != history.KindBelief || e.Instance != paused || e.Endpoint != "ep-0" {
			continue
		}
		switch {
		case e.At < from:
			heldAtPause, token = e.Belief.Held, e.Belief.Token
		case e.At < to:
			require.True(t, e.Belief.Held, "the paused instance ended its belief at %s, during its pause (%s..%s): its timers ran", e.At, from, to)
		case !e.Belief.Held:
			endedAfterWaking = true
		}
	}
	require.True(t, heldAtPause, "the paused instance held ep-0 when it froze")
	require.True(t, endedAfterWaking, "on waking, the instance finds its deadline passed and ends its belief")

	// The pause took hold as the holder was about to poll: on waking that poll goes out with the old
	// token, and the resource, which has seen a newer one since, refuses it.
	refused := false
	for _, e := range h.Events {
		if e.Kind == history.KindPoll && e.Instance == paused && e.Endpoint == "ep-0" && e.At >= to {
			refused = e.Poll.Token == token && e.Poll.Outcome == history.PollRefused
			break
		}
	}
	require.True(t, refused, "the woken holder's first poll carries its old token and is refused by fencing")
}
