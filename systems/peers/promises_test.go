package peers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/bubble"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/peers"
)

// noBalancePromised is bsm/redislock wired as its README shows, declaring what such a lock library
// promises: nothing spreads the endpoints.
type noBalancePromised struct{ peers.RedisLock }

func (noBalancePromised) Name() string { return "redislock-no-balance" }

func (noBalancePromised) Promises() sim.Promises {
	no := false
	return sim.Promises{Balance: &no}
}

// A lock library does not spread endpoints: judged on balance, every run of balance-3x9 fails. Declared
// not promised, balance is still judged and shown, and the run passes on what the library promises.
func TestWhatASystemDoesNotPromiseIsShownNotCounted(t *testing.T) {
	bubble.ForTest(t)
	sc, err := scenarios.Get("balance-3x9")
	require.NoError(t, err)
	judge := func(sys sim.System) (bool, checker.Outcome, []string) {
		res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 1, Virtual: true})
		require.NoError(t, err)
		rep := checker.Check(res.History, checker.DefaultOptions())
		var balance checker.Outcome
		for _, r := range rep.Results {
			if r.Invariant == checker.InvBalance {
				balance = r.Outcome
			}
		}
		return reports.Judge(rep, reports.ExpectOf(res.History.Meta)), balance, res.History.Meta.NotPromised
	}
	passed, balance, notPromised := judge(peers.RedisLock{})
	require.Equal(t, checker.Violated, balance)
	require.False(t, passed, "balance counts when promised")
	require.Empty(t, notPromised)

	passed, balance, notPromised = judge(noBalancePromised{})
	require.Equal(t, checker.Violated, balance, "still judged")
	require.Equal(t, []string{checker.InvBalance}, notPromised, "recorded in the history")
	require.True(t, passed, "not counted")
}
