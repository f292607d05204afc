package chaos_test

import (
	"encoding/json"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
)

func TestWirePauseParameters(t *testing.T) {
	f := chaos.WirePause{Of: "ep-0", Command: "get", After: true, For: 45 * time.Second, Within: 10 * time.Second}
	require.NoError(t, f.Validate())
	require.Equal(t, "after the reply to GET", f.Where())
	require.Equal(t, "before EXPIRE", chaos.WirePause{Command: "expire", For: time.Second}.Where())
	require.Equal(t, "before EXPIRE or DEL", chaos.WirePause{Command: "expire|del", For: time.Second}.Where())
	require.NoError(t, chaos.WirePause{Command: "EXPIRE|DEL", For: time.Second}.Validate())
	b, err := json.Marshal(f)
	require.NoError(t, err)
	require.JSONEq(t, `{"slot":0,"of":"ep-0","command":"get","after":true,"for":"45s","within":"10s"}`, string(b))
	scaled := f.Scaled(0.1).(chaos.WirePause)
	require.Equal(t, 4500*time.Millisecond, scaled.For)
	require.Equal(t, time.Second, scaled.Within)

	for _, bad := range []chaos.WirePause{
		{Command: "", For: time.Second},
		{Command: "GET key", For: time.Second},
		{Command: "GET||DEL", For: time.Second},
		{Command: "GET|", For: time.Second},
		{Command: "GET", For: 0},
		{Command: "GET", For: time.Second, Within: -time.Second},
	} {
		require.Error(t, bad.Validate(), "%+v", bad)
		require.Error(t, chaos.Validate(chaos.Schedule{{At: time.Second, For: time.Second, Fault: bad}}, 3, []string{"ep-0"}), "%+v", bad)
	}
}

// The wire-pause episode is drawn only when named (the harness names it for process systems), so the
// schedules other systems explore stay what their seeds gave before; when named, its steps last long
// enough to hold the pause they arm.
func TestExploreDrawsWirePausesOnlyWhenNamed(t *testing.T) {
	for seed := int64(1); seed <= 50; seed++ {
		s, err := chaos.Explore(rand.New(rand.NewSource(seed)), exploreOpts())
		require.NoError(t, err)
		for _, st := range s {
			_, ok := st.Fault.(chaos.WirePause)
			require.False(t, ok, "seed %d drew a wire pause without being asked", seed)
		}
	}
	o := exploreOpts()
	o.Episodes = append(append([]string(nil), chaos.ExploreEpisodes...), chaos.ExploreExtra...)
	points := map[chaos.WirePausePoint]bool{}
	for seed := int64(1); seed <= 1000; seed++ {
		s, err := chaos.Explore(rand.New(rand.NewSource(seed)), o)
		require.NoError(t, err)
		require.NoError(t, chaos.Validate(s, o.Instances, []string{"ep-0", "ep-1", "ep-2", "ep-3", "ep-4", "ep-5", "ep-6", "ep-7", "ep-8", "ep-9", "ep-10", "ep-11"}))
		for _, st := range s {
			if f, ok := st.Fault.(chaos.WirePause); ok {
				points[chaos.WirePausePoint{Command: f.Command, After: f.After}] = true
				require.GreaterOrEqual(t, st.For, f.Within+f.For, "the step holds the arming window and the pause")
				require.GreaterOrEqual(t, f.For, o.TTL, "the pause outlasts a lease")
			}
		}
	}
	require.Len(t, points, len(chaos.WirePausePoints), "every point is drawn")
}
