package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

func TestLiveness(t *testing.T) {
	s := time.Second
	steady := func(m *history.Meta) { m.Steady = []history.Window{{From: 2 * s, To: 18 * s}} }
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		msg     string
	}{
		{"all polled", newBuilder().with(steady).polls("a", "e1", 0, 20*s, s, 0).polls("b", "e2", 0, 20*s, s, 0),
			Pass, "every active endpoint was polled"},
		{"gap within the slack", newBuilder().with(steady).polls("a", "e1", 0, 6*s, s, 0).polls("b", "e1", 9*s, 20*s, s, 0),
			Pass, "slack 4s"},
		{"starved endpoint", newBuilder().with(steady).polls("a", "e1", 0, 20*s, s, 0).
			polls("b", "e2", 0, 5*s, s, 0).polls("b", "e2", 12*s, 20*s, s, 0),
			Violated, "e2 was not polled for 8s (from 4s to 12s)"},
		{"starved until the window ends", newBuilder().with(steady).polls("a", "e1", 0, 20*s, s, 0).
			polls("b", "e2", 0, 10*s, s, 0),
			Violated, "e2 was not polled for 9s (from 9s to 18s)"},
		{"endpoint never polled", newBuilder().with(steady).with(func(m *history.Meta) { m.Endpoints = 3 }).
			polls("a", "e1", 0, 20*s, s, 0).polls("b", "e2", 0, 20*s, s, 0),
			Violated, "only 2 of the 3 endpoints"},
		{"paused session not polled", newBuilder().with(steady).polls("a", "e1", 0, 20*s, s, 0).
			polls("b", "e2", 0, 6*s, s, 0).session("e2", history.SessionPaused, 5*s+ms(500)),
			Pass, "1 pauses or removals judged"},
		{"in-flight poll after pause may finish", newBuilder().polls("a", "e1", 0, 20*s, s, 0).
			polls("b", "e2", 0, 7*s, s, 0).session("e2", history.SessionPaused, 5*s+ms(900)),
			Pass, "1 pauses or removals judged"},
		{"paused session polled", newBuilder().polls("a", "e1", 0, 20*s, s, 0).
			polls("b", "e2", 0, 10*s, s, 0).session("e2", history.SessionPaused, 5*s+ms(500)),
			Violated, "e2 was paused at 5.5s but b polled it at 7s (3 polls after the grace of 1.25s)"},
		{"paused session polled until the next scan", newBuilder().with(func(m *history.Meta) { m.DiscoveryInterval = 2 * s }).
			polls("a", "e1", 0, 20*s, s, 0).
			polls("b", "e2", 0, 8*s, s, 0).session("e2", history.SessionPaused, 5*s+ms(500)),
			Pass, "1 pauses or removals judged"},
		{"paused session polled after the next scan", newBuilder().with(func(m *history.Meta) { m.DiscoveryInterval = 2 * s }).
			polls("a", "e1", 0, 20*s, s, 0).
			polls("b", "e2", 0, 10*s, s, 0).session("e2", history.SessionPaused, 5*s+ms(500)),
			Violated, "e2 was paused at 5.5s but b polled it at 9s (1 polls after the grace of 3.25s)"},
		{"removed session polled", newBuilder().polls("a", "e1", 0, 20*s, s, 0).
			polls("b", "e2", 0, 10*s, s, 0).session("e2", history.SessionRemoved, 5*s+ms(500)),
			Violated, "e2 was removed"},
		{"resumed session may be polled", newBuilder().with(steady).polls("a", "e1", 0, 20*s, s, 0).
			polls("b", "e2", 0, 6*s, s, 0).session("e2", history.SessionPaused, 5*s+ms(500)).
			session("e2", history.SessionResumed, 9*s).polls("b", "e2", 10*s, 20*s, s, 0),
			Pass, "every active endpoint"},
		{"added session starved", newBuilder().with(steady).polls("a", "e1", 0, 20*s, s, 0).
			session("e3", history.SessionAdded, 5*s),
			Violated, "e3 was not polled for 13s (from 5s to 18s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := resultOf(t, Check(tc.b.build(), DefaultOptions()), InvLiveness)
			require.Equal(t, tc.outcome, r.Outcome, allText(r))
			require.Contains(t, allText(r), tc.msg)
			if tc.outcome == Violated {
				require.Len(t, r.Violations, 1)
			}
		})
	}
}
