package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

func TestSinglePoller(t *testing.T) {
	tests := []struct {
		name     string
		b        *builder
		outcome  Outcome
		reached  int // violations that reached the resource
		refused  int // refusals listed
		msg      string
		involved []string
	}{
		{
			name: "disjoint endpoints",
			b: newBuilder().polls("a", "e1", 0, 5*time.Second, time.Second, 1).
				polls("b", "e2", 0, 5*time.Second, time.Second, 1),
			outcome: Pass,
		},
		{
			name:    "touching polls are not overlaps",
			b:       newBuilder().poll("a", "e1", 0, time.Second, 0).poll("b", "e1", time.Second, 2*time.Second, 0),
			outcome: Pass,
		},
		{
			name:     "overlap",
			b:        newBuilder().poll("a", "e1", 0, ms(500), 1).poll("b", "e1", ms(400), ms(600), 2),
			outcome:  Violated,
			reached:  1,
			msg:      "1 overlapping",
			involved: []string{"a", "b"},
		},
		{
			name: "zombie after newer token",
			b: newBuilder().poll("a", "e1", 0, ms(100), 1).poll("b", "e1", time.Second, time.Second+ms(100), 2).
				poll("a", "e1", 2*time.Second, 2*time.Second+ms(100), 1),
			outcome:  Violated,
			reached:  1,
			msg:      "1 zombie poll",
			involved: []string{"b", "a"},
		},
		{
			name: "stale poll refused by fencing is not a violation",
			b: newBuilder().poll("a", "e1", 0, ms(100), 1).poll("b", "e1", time.Second, time.Second+ms(100), 2).
				refused("a", "e1", 2*time.Second, 1, 2),
			outcome: Pass,
			refused: 1,
			msg:     "1 stale poll refused by fencing",
		},
		{
			name: "zombie by belief without tokens",
			b: newBuilder().belief("a", "e1", 0, true, 0).poll("a", "e1", ms(10), ms(100), 0).
				belief("b", "e1", time.Second, true, 0).poll("b", "e1", time.Second+ms(10), time.Second+ms(100), 0).
				poll("a", "e1", 2*time.Second, 2*time.Second+ms(100), 0),
			outcome: Violated,
			reached: 1,
			msg:     "1 zombie poll",
		},
		{
			name: "re-acquisition without tokens or beliefs",
			b: newBuilder().poll("a", "e1", 0, ms(100), 0).poll("b", "e1", time.Second, time.Second+ms(100), 0).
				poll("a", "e1", 2*time.Second, 2*time.Second+ms(100), 0),
			outcome: Pass,
		},
		{
			name: "re-acquisition with a newer token",
			b: newBuilder().poll("a", "e1", 0, ms(100), 1).poll("b", "e1", time.Second, time.Second+ms(100), 2).
				poll("a", "e1", 2*time.Second, 2*time.Second+ms(100), 3),
			outcome: Pass,
		},
		{
			name: "election leaders acting together",
			b: newBuilder().with(func(m *history.Meta) { m.Kind = "election" }).
				poll("a", "role", 0, time.Second, 1).poll("b", "role", ms(999), 2*time.Second, 2),
			outcome: Violated,
			reached: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(tc.b.build(), DefaultOptions())
			r := resultOf(t, rep, InvSinglePoller)
			require.Equal(t, tc.outcome, r.Outcome, r.Message)
			require.Len(t, reachedViolations(r), tc.reached)
			require.Len(t, r.Violations, tc.reached)
			require.Equal(t, tc.refused, rep.Refused)
			require.Contains(t, r.Message, tc.msg)
			if tc.involved != nil {
				v := reachedViolations(r)[0]
				require.Equal(t, tc.involved, v.Instances)
				require.Len(t, v.Events, 2)
				require.Equal(t, "e1", v.Endpoint)
			}
			for _, v := range r.Violations {
				require.NotEmpty(t, v.Message)
				require.NotEmpty(t, v.Events)
			}
		})
	}
}

// Outside the assumptions, a stale poll that reached the resource is still a violation; the fault it is
// attributed to is named for the reader.
func TestSinglePollerOutsideAssumptionsStillViolated(t *testing.T) {
	s := time.Second
	h := newBuilder().assume(0.01, "pause").paused("f1", "a", s, 3*s).
		poll("a", "e1", 0, ms(100), 1).poll("b", "e1", 2*s, 2*s+ms(100), 2).
		poll("a", "e1", 3*s+ms(10), 3*s+ms(100), 1).build()
	rep := Check(h, DefaultOptions())
	r := resultOf(t, rep, InvSinglePoller)
	require.Equal(t, Violated, r.Outcome)
	require.Len(t, r.Violations, 1)
	require.Equal(t, []string{"f1 pause"}, r.Violations[0].Outside)
	require.Empty(t, r.Caught)
	require.False(t, rep.OK())
}
