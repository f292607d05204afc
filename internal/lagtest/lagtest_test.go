package lagtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// slowWatch is a watch of a backend whose every answer takes 80 ms, once it has seen one.
func slowWatch(t *testing.T) *Watch {
	slow := Ping{Name: "slow backend", Do: func(ctx context.Context) error {
		select {
		case <-time.After(80 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	}}
	w := Start(t, slow)
	require.Eventually(t, func() bool { lag, _ := w.Worst(); return lag >= 80*time.Millisecond }, 5*time.Second, time.Millisecond)
	return w
}

// excused runs Excuse in a subtest with tolerance and reports whether the subtest was skipped (Excuse
// returned otherwise, and the subtest went on).
func excused(t *testing.T, w *Watch, tolerance time.Duration) bool {
	var skipped, returned bool
	t.Run("excuse", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		w.Excuse(t, tolerance, "a premise failed")
		returned = true
	})
	require.NotEqual(t, skipped, returned, "Excuse either skips or returns")
	return skipped
}

// A failure is excused only by lag at least as large as the tolerance: a backend that answers its pings
// slowly excuses a check that tolerates less, not one that tolerates more. The excused test is counted in
// the file LogEnv names.
func TestExcuseNeedsLagAboveTheTolerance(t *testing.T) {
	log := filepath.Join(t.TempDir(), "inconclusive.txt")
	t.Setenv(LogEnv, log)
	w := slowWatch(t)
	lag, what := w.Worst()
	require.Equal(t, "slow backend's answer to a ping", what)

	require.False(t, excused(t, w, lag+time.Hour), "lag below the tolerance excuses nothing")
	_, err := os.Stat(log)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing counted")

	require.True(t, excused(t, w, 50*time.Millisecond))
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], "./internal/lagtest TestExcuseNeedsLagAboveTheTolerance/excuse#01: ", "the second subtest of that name")
	require.Contains(t, lines[0], "INCONCLUSIVE: a premise failed")
	require.Contains(t, lines[0], "slow backend")
}

// Inconclusive skips and counts unconditionally.
func TestInconclusiveSkipsAndCounts(t *testing.T) {
	log := filepath.Join(t.TempDir(), "inconclusive.txt")
	t.Setenv(LogEnv, log)
	var skipped bool
	t.Run("judged elsewhere", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Inconclusive(t, "the checker could not judge %s", "failover\nor liveness")
	})
	require.True(t, skipped)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "./internal/lagtest TestInconclusiveSkipsAndCounts/judged_elsewhere: INCONCLUSIVE: the checker could not judge failover or liveness\n", string(b),
		"one line a test, whatever the message, naming its package as go test takes it")
	l, ok := ParseLine(string(b))
	require.True(t, ok)
	require.Equal(t, Line{Package: "./internal/lagtest", Test: "TestInconclusiveSkipsAndCounts/judged_elsewhere",
		Message: "INCONCLUSIVE: the checker could not judge failover or liveness"}, l)
}

// A line names its package and test so that it can be run again; what is not such a line is refused.
func TestLineRoundTrips(t *testing.T) {
	for _, l := range []Line{
		{Package: ".", Test: "TestRoot", Message: "INCONCLUSIVE: late: by 3s"},
		{Package: "./election", Test: "TestX/a:b/case#01", Message: "INCONCLUSIVE: x"},
	} {
		got, ok := ParseLine(l.String() + "\n")
		require.True(t, ok, l.String())
		require.Equal(t, l, got)
	}
	for _, bad := range []string{"", "TestX: INCONCLUSIVE: no package", "./p TestX", "./p : empty name"} {
		_, ok := ParseLine(bad)
		require.False(t, ok, bad)
	}
}

// A late event is excused only by lag that can account for it: at most Handoffs times the worst lag past
// its bound.
func TestExcuseLateNeedsLagThatAccountsForIt(t *testing.T) {
	t.Setenv(LogEnv, filepath.Join(t.TempDir(), "inconclusive.txt"))
	w := slowWatch(t)
	lateBy := func(over time.Duration) bool {
		var skipped bool
		t.Run("late", func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			w.ExcuseLate(t, 50*time.Millisecond, over, "late by %s", over)
		})
		return skipped
	}
	require.True(t, lateBy(100*time.Millisecond), "80 ms of lag can account for 100 ms past the bound")
	require.False(t, lateBy(10*time.Second), "not for 10 s")
}
