package sim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
	"github.com/tenurelabs/tenure/systems/reference"
)

func outcome(rep checker.Report, inv string) checker.Result {
	for _, r := range rep.Results {
		if r.Invariant == inv {
			return r
		}
	}
	return checker.Result{}
}

// A checker that cannot fail is a defect: the classic design (no local deadline, unconditional renew)
// must be caught polling an endpoint that another instance has taken over, in the scenario built to
// expose it, while the reference passes the very same scenario.
func TestCheckerCatchesTheNaiveDesign(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	sc, err := scenarios.Get("redis-partition")
	require.NoError(t, err)
	for _, tc := range []struct {
		system sim.System
		want   checker.Outcome
	}{
		{baselines.Naive{}, checker.Violated},
		{reference.NewReference(), checker.Pass},
	} {
		t.Run(tc.system.Name(), func(t *testing.T) {
			res, err := sim.Run(context.Background(), sim.Options{System: tc.system, Scenario: sc, Seed: 3, TimeScale: 0.1, Backend: "server"})
			require.NoError(t, err)
			rep := checker.Check(res.History, checker.DefaultOptions())
			r := outcome(rep, checker.InvSinglePoller)
			require.Equal(t, tc.want, r.Outcome, r.Message)
			if tc.want == checker.Violated {
				require.NotEmpty(t, r.Violations)
				require.True(t, r.Violations[0].ReachedResource, "the naive design's zombie polls reach the resource")
			}
		})
	}
}
