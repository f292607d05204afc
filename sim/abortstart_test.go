package sim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
)

// A system whose Start returns at once and works in the background (naive) is a design of its own:
// stopping it during its start is judged by the stop alone, and the run goes as scheduled.
func TestAbortedStartOfABackgroundStart(t *testing.T) {
	t.Parallel()
	redistest.Start(t) // the scenario needs a private redis-server; skips or fails as the others do
	sc, err := scenarios.Get("stop-during-start")
	require.NoError(t, err)
	res, err := sim.Run(context.Background(), sim.Options{System: baselines.Naive{}, Scenario: sc, Seed: 1, TimeScale: 0.05, Backend: "server"})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors)
}
