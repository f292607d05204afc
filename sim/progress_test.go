package sim_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
)

// The progress callback goes on to the end of the run, whether the schedule ends early or is empty, and
// its last call reports the whole run.
func TestProgressRunsToTheEnd(t *testing.T) {
	t.Parallel()
	for name, steps := range map[string]chaos.Schedule{
		"no faults":        nil,
		"early last fault": {{At: 2 * time.Second, For: time.Second, Fault: chaos.Partition{Slot: 0}}},
	} {
		t.Run(name, func(t *testing.T) {
			sc := sim.Scenario{Name: "progress", Instances: 1, Endpoints: 2, Duration: 30 * time.Second, Steps: steps}
			var mu sync.Mutex
			var calls []sim.Progress
			res, err := sim.Run(context.Background(), sim.Options{System: baselines.Naive{}, Scenario: sc, Seed: 1, TimeScale: 0.1,
				Backend: "embedded", Progress: func(p sim.Progress) {
					mu.Lock()
					calls = append(calls, p)
					mu.Unlock()
				}})
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, calls)
			last := calls[len(calls)-1]
			require.Equal(t, 3*time.Second, last.Total)
			require.GreaterOrEqual(t, last.Elapsed, last.Total, "the last progress call is at the end of the run")
			require.LessOrEqual(t, last.Elapsed, res.History.Meta.Duration, "the last call comes as the run ends")
			// Calls in the second half of the run, long after the last fault ended: the line did not freeze.
			late := 0
			for _, p := range calls {
				if p.Elapsed > last.Total/2 {
					late++
				}
			}
			require.Greater(t, late, 1)
		})
	}
}
