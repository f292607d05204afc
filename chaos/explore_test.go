package chaos_test

import (
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
)

func exploreOpts() chaos.ExploreOptions {
	return chaos.ExploreOptions{From: 60 * time.Second, To: 380 * time.Second, Instances: 4, Endpoints: 12,
		TTL: 30 * time.Second, CallBound: 3 * time.Second, DriftBound: 0.01}
}

// The composing nemesis is a function of its seed, stays inside its window, keeps the fleet between 2
// and Instances+2, and overlaps faults of different classes.
func TestExploreComposesAndIsSeeded(t *testing.T) {
	o := exploreOpts()
	sessions := make([]string, o.Endpoints)
	for i := range sessions {
		sessions[i] = "ep-" + string(rune('0'+i%10))
		if i >= 10 {
			sessions[i] = "ep-1" + string(rune('0'+i-10))
		}
	}
	overlaps, kinds := 0, map[string]bool{}
	for seed := int64(1); seed <= 200; seed++ {
		a, err := chaos.Explore(rand.New(rand.NewSource(seed)), o)
		require.NoError(t, err)
		b, err := chaos.Explore(rand.New(rand.NewSource(seed)), o)
		require.NoError(t, err)
		require.Equal(t, a.String(), b.String(), "seed %d", seed)
		require.NotEmpty(t, a)
		require.NoError(t, chaos.Validate(a, o.Instances, sessions), "seed %d:\n%s", seed, a)
		live := o.Instances
		for i, st := range a {
			require.GreaterOrEqual(t, st.At, o.From)
			require.LessOrEqual(t, st.At+st.For, o.To)
			kinds[st.Fault.Name()] = true
			switch st.Fault.(type) {
			case chaos.Crash, chaos.Stop:
				live--
			case chaos.Start:
				live++
			}
			require.GreaterOrEqual(t, live, 1, "seed %d", seed)
			require.LessOrEqual(t, live, o.Instances+2, "seed %d", seed)
			for _, o := range a[i+1:] {
				if o.At < st.At+st.For && o.Fault.Name() != st.Fault.Name() {
					overlaps++
				}
			}
		}
	}
	require.Greater(t, overlaps, 200, "faults of different kinds overlap")
	for _, k := range []string{"stall", "partition", "pause", "redis-restart", "redis-restart-from-snapshot", "redis-pause",
		"slow-requests", "slow-replies", "crash", "stop", "start", "clock-drift"} {
		require.True(t, kinds[k], "the nemesis draws %s", k)
	}
}

func TestExploreRefusesUnknownEpisodes(t *testing.T) {
	o := exploreOpts()
	o.Episodes = []string{"no-such"}
	_, err := chaos.Explore(rand.New(rand.NewSource(1)), o)
	require.ErrorContains(t, err, "no-such")
}

// Every fleet size and every subset of episodes draws a schedule: no fallback loops.
func TestExploreSmallFleets(t *testing.T) {
	for n := 1; n <= 3; n++ {
		for _, ep := range chaos.ExploreEpisodes {
			o := exploreOpts()
			o.Instances, o.Episodes = n, []string{ep}
			for seed := int64(1); seed <= 5; seed++ {
				_, err := chaos.Explore(rand.New(rand.NewSource(seed)), o)
				require.NoError(t, err, "%d instances, %s", n, ep)
			}
		}
	}
}
