package reference_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/sim"
)

// The reference election reports its local deadline with every belief: at acquisition and at each
// renewal that moves it; a belief ends (Held false) when its leader context is cancelled.
func TestElectionBeliefsCarryDeadlines(t *testing.T) {
	redistest.Start(t)
	sys, err := sim.Lookup("election-redis")
	require.NoError(t, err)
	sc := sim.Scenario{
		Name: "election-beliefs", Instances: 2, Endpoints: 1, Duration: 90 * time.Second,
		Steps: chaos.Schedule{{At: 60 * time.Second, For: 10 * time.Second, Fault: chaos.Partition{Slot: 0}}},
	}
	res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 0.1, Backend: "server"})
	require.NoError(t, err)
	var acquired, renewed int
	open := map[string]bool{}
	for _, e := range res.History.Events {
		if e.Kind != history.KindBelief {
			continue
		}
		b := e.Belief
		key := e.Instance + "/" + e.Endpoint
		if b.Held {
			// Until is the system's report; the recorder may also have converted it into Deadline.
			require.True(t, !b.Until.IsZero() || b.Deadline > 0, "a held belief carries its deadline: %+v", b)
			if b.Deadline > 0 {
				require.Greater(t, b.Deadline, e.At, "a deadline in the future: %+v", b)
			}
			switch b.Reason {
			case history.ReasonAcquired:
				require.False(t, open[key], "acquired twice without an end")
				acquired++
			case history.ReasonRenewed:
				require.True(t, open[key], "a renewal extends an open belief")
				renewed++
			}
			open[key] = true
		} else {
			open[key] = false
		}
	}
	require.Positive(t, acquired)
	require.Positive(t, renewed)
}
