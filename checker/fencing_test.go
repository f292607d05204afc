package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFencing(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		msg     string
	}{
		{"increasing", newBuilder().polls("a", "e1", 0, 3*s, s, 1).polls("b", "e1", 3*s, 6*s, s, 2).
			belief("a", "e1", 0, true, 1).belief("b", "e1", 3*s, true, 2), Pass, "never went backwards"},
		{"refused stale token is fencing working", newBuilder().polls("a", "e1", 0, 3*s, s, 2).
			refused("b", "e1", 3*s, 1, 2), Pass, "never went backwards"},
		{"poll token backwards", newBuilder().polls("a", "e1", 0, 3*s, s, 2).polls("b", "e1", 3*s, 6*s, s, 1),
			Violated, "with token 1 after a had reached it"},
		{"same instance token backwards", newBuilder().poll("a", "e1", 0, ms(10), 5).poll("a", "e1", s, s+ms(10), 4),
			Violated, "token 4"},
		{"belief token reused by another instance", newBuilder().polls("a", "e1", 0, 3*s, s, 0).
			belief("a", "e1", 0, true, 3).belief("b", "e1", 2*s, true, 3), Violated, "not above the token 3"},
		{"belief token backwards", newBuilder().polls("a", "e1", 0, 3*s, s, 0).
			belief("a", "e1", 0, true, 3).belief("a", "e1", s, false, 0).belief("b", "e1", 2*s, true, 2), Violated, "token 2"},
		{"same holding reported twice", newBuilder().polls("a", "e1", 0, 3*s, s, 0).
			belief("a", "e1", 0, true, 3).belief("a", "e1", s, true, 3), Pass, "2 acquisitions"},
		{"no tokens", newBuilder().polls("a", "e1", 0, 3*s, s, 0), Skipped, "no fencing tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := resultOf(t, Check(tc.b.build(), DefaultOptions()), InvFencing)
			require.Equal(t, tc.outcome, r.Outcome, allText(r))
			require.Contains(t, allText(r), tc.msg)
			if tc.outcome == Violated {
				require.Len(t, r.Violations, 1)
				require.Len(t, r.Violations[0].Events, 2)
			}
		})
	}
}
