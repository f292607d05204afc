package baselines

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func TestRegisteredWithTheirKinds(t *testing.T) {
	for name, want := range map[string]struct {
		kind string
		pg   bool
	}{
		"spec-naive": {"lease", false}, "getexpire": {"election", false},
		"heartbeat-takeover": {"election", false}, "pg-advisory": {"election", true},
	} {
		sys, err := sim.Lookup(name)
		require.NoError(t, err)
		require.Equal(t, name, sys.Name())
		kind := "lease"
		if k, ok := sys.(sim.KindReporter); ok {
			kind = k.Kind()
		}
		require.Equal(t, want.kind, kind, name)
		pg := false
		if p, ok := sys.(sim.PostgresUser); ok {
			pg = p.UsesPostgres()
		}
		require.Equal(t, want.pg, pg, name)
	}
}

func TestJitterIsSeededAndWithinTwentyPercent(t *testing.T) {
	a, b := newJitter(7), newJitter(7)
	d := 10 * time.Second
	for i := 0; i < 1000; i++ {
		x := a.around(d)
		require.Equal(t, x, b.around(d), "same seed, same draws")
		require.GreaterOrEqual(t, x, 8*time.Second)
		require.LessOrEqual(t, x, 12*time.Second)
		u := a.upTo(d)
		require.Equal(t, u, b.upTo(d))
		require.GreaterOrEqual(t, u, time.Duration(0))
		require.Less(t, u, d)
	}
}

// Plain rendezvous hashing: the same owner whatever the order of members, and no bound on load.
func TestOwnerIsPlainRendezvous(t *testing.T) {
	members := []string{"host-1764140000123456789-1a2b3c4d", "host-1764140000223456789-9f8e7d6c", "host-1764140000323456789-00ff11ee"}
	counts := map[string]int{}
	for i := 0; i < 300; i++ {
		ep := fmt.Sprintf("ep-%d", i)
		o := owner(members, ep)
		require.Equal(t, o, owner([]string{members[2], members[0], members[1]}, ep))
		counts[o]++
	}
	require.Len(t, counts, 3, "every member wins some endpoints: %v", counts)
	for m, n := range counts {
		require.Greater(t, n, 50, "%s wins %d of 300: the hash is degenerate", m, n)
	}
	require.Equal(t, "", owner(nil, "ep-0"))
}

func TestScriptsAreClassified(t *testing.T) {
	sys := SpecNaive{}
	op, ok := sys.Classify([]any{"evalsha", renewScript.sha, "1", "poll:lease:ep-0", "inst-1", "3000"}, int64(1), nil)
	require.True(t, ok)
	require.Equal(t, history.Op{Kind: history.OpRenew, Key: "poll:lease:ep-0", Owner: "inst-1", TTL: 3 * time.Second, OK: true}, op)
	op, ok = sys.Classify([]any{"eval", releaseScript.src, "1", "poll:lease:ep-0", "inst-1"}, int64(0), nil)
	require.True(t, ok)
	require.Equal(t, history.Op{Kind: history.OpRelease, Key: "poll:lease:ep-0", Owner: "inst-1"}, op)
	_, ok = sys.Classify([]any{"evalsha", "0123456789012345678901234567890123456789", "1", "k", "v"}, int64(1), nil)
	require.False(t, ok, "an unknown script is not claimed")
	_, ok = GetExpire{}.Classify([]any{"evalsha", renewScript.sha, "1", "poll:lease:ep-0", "inst-1", "3000"}, int64(1), nil)
	require.False(t, ok, "getexpire renews with GET and EXPIRE, never with the script")
}

func TestSecondsRoundsToWholeSecondsOfAtLeastOne(t *testing.T) {
	require.Equal(t, 3*time.Second, seconds(3*time.Second))
	require.Equal(t, time.Second, seconds(200*time.Millisecond))
	require.Equal(t, 30*time.Second, seconds(30*time.Second+400*time.Millisecond))
}
