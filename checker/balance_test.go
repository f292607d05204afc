package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// fleet returns a balance-expecting history where each instance polls the given endpoints every second.
func fleet(hold map[string][]string) *builder {
	b := newBuilder().with(func(m *history.Meta) {
		m.ExpectBalance = true
		m.Steady = []history.Window{{From: 4 * time.Second, To: 16 * time.Second}}
	})
	for _, in := range []string{"a", "b", "c"} {
		if _, ok := hold[in]; ok {
			b.life(in, history.LifeStarted, 0)
		}
	}
	for in, eps := range hold {
		for _, ep := range eps {
			b.polls(in, ep, ms(50), 20*time.Second, time.Second, 0)
		}
	}
	return b
}

func TestBalance(t *testing.T) {
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		msg     string
	}{
		{"even", fleet(map[string][]string{"a": {"e1", "e2"}, "b": {"e3", "e4"}}), Pass, "within ±1"},
		{"within one", fleet(map[string][]string{"a": {"e1", "e2"}, "b": {"e3", "e4"}, "c": {"e5"}}), Pass, "within ±1"},
		{"three to one", fleet(map[string][]string{"a": {"e1", "e2", "e3"}, "b": {"e4"}}), Violated, "a holds 3, b holds 1"},
		{"idle instance", fleet(map[string][]string{"a": {"e1", "e2"}, "b": {"e3", "e4"}, "c": {}}), Violated, "c holds 0"},
		{"not expected", fleet(map[string][]string{"a": {"e1", "e2", "e3"}, "b": {"e4"}}).
			with(func(m *history.Meta) { m.ExpectBalance = false }), Skipped, "does not expect"},
		{"election", fleet(map[string][]string{"a": {"e1", "e2", "e3"}, "b": {"e4"}}).
			with(func(m *history.Meta) { m.Kind = "election" }), Skipped, "leader election"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(tc.b.build(), DefaultOptions())
			r := resultOf(t, rep, InvBalance)
			require.Equal(t, tc.outcome, r.Outcome, r.Message)
			require.Contains(t, allText(r), tc.msg)
			if tc.outcome == Violated {
				require.Len(t, r.Violations, 1)
				require.Equal(t, 4*time.Second, r.Violations[0].At)
			}
			require.NotEmpty(t, rep.Balance, "samples are produced whatever the verdict")
		})
	}
}

func TestBalanceSamples(t *testing.T) {
	b := fleet(map[string][]string{"a": {"e1", "e2", "e3"}, "b": {"e4"}}).
		life("c", history.LifeStarted, 10*time.Second).polls("c", "e5", 10*time.Second+ms(50), 20*time.Second, time.Second, 0)
	rep := Check(b.build(), DefaultOptions())
	require.Len(t, rep.Balance, 20)
	s := rep.Balance[4] // at 5 s
	require.Equal(t, 5*time.Second, s.At)
	require.Equal(t, map[string]int{"a": 3, "b": 1}, s.PerInst)
	require.InDelta(t, 5.0/2, s.Ideal, 1e-9, "e5 is named by polls, so it counts as an endpoint")
	s = rep.Balance[14] // at 15 s
	require.Equal(t, map[string]int{"a": 3, "b": 1, "c": 1}, s.PerInst)
	require.InDelta(t, 5.0/3, s.Ideal, 1e-9)
}
