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
	"github.com/tenurelabs/tenure/systems/baselines"
)

// A run whose slow-requests fault holds an instance's renewals (PEXPIRE) records, on the operations it
// held, when they landed: the fault's delay after they were sent, or later (a re-send). Nobody else's
// operations, and none of its others, have one.
func TestRunRecordsWhenHeldRequestsLanded(t *testing.T) {
	t.Parallel()
	redistest.Start(t) // fails or skips exactly like the other real-Redis tests
	const scale = 0.1
	delay := 4 * time.Second // 400 ms at the scale, past the 300 ms a call waits
	sc := sim.Scenario{
		Name: "held", Instances: 2, Endpoints: 2, Duration: 50 * time.Second,
		Steps: chaos.Schedule{{At: 15 * time.Second, For: 25 * time.Second, Fault: chaos.SlowRequests{Slot: 0, Delay: delay, Match: "pexpire"}, Jitter: -1}},
	}
	res, err := sim.Run(context.Background(), sim.Options{System: baselines.Naive{}, Scenario: sc, Seed: 1, TimeScale: scale, Backend: "server"})
	require.NoError(t, err)
	var fault *history.Event
	for i, e := range res.History.Events {
		if e.Kind == history.KindFault {
			fault = &res.History.Events[i]
		}
	}
	require.NotNil(t, fault)
	require.Len(t, fault.Fault.Targets, 1)
	held, unknown := 0, 0
	for _, e := range res.History.Events {
		if e.Op == nil || e.Op.Landed == 0 {
			continue
		}
		held++
		t.Logf("%s at %v: %s, landed %v later", e.Instance, e.At, e.Op.Command, e.Op.Landed-e.At)
		require.Equal(t, fault.Fault.Targets[0], e.Instance, "only the held instance's commands landed late: %+v", e.Op)
		require.Equal(t, history.OpRenew, e.Op.Kind, "only its renewals (PEXPIRE) were held: %+v", e.Op)
		require.GreaterOrEqual(t, e.Op.Landed-e.At, time.Duration(float64(delay)*scale), "%+v", e.Op)
		require.True(t, e.At >= fault.At && e.At <= fault.End, "sent while the fault held: %+v at %v", e.Op, e.At)
		if e.Op.Unknown {
			unknown++
		}
	}
	require.Positive(t, held, "the held instance's commands landed late")
	require.Positive(t, unknown, "some were given up on before they landed")
}
