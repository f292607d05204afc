package election

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventString(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 8, 0, 1, 250_000_000, time.FixedZone("CET", 3600))
	require.Equal(t, "2026-11-26T07:00:01.250Z cron acquired term 7 (leader)",
		Event{Type: Acquired, Role: "cron", Time: at, State: Leader, Term: 7}.String())
	require.Equal(t, "2026-11-26T07:00:01.250Z cron state-changed candidate → follower",
		Event{Type: StateChanged, Role: "cron", Time: at, Prev: Candidate, State: Follower}.String())
	require.Equal(t, "2026-11-26T07:00:01.250Z cron lost term 7 (follower): boom",
		Event{Type: Lost, Role: "cron", Time: at, State: Follower, Term: 7, Err: errors.New("boom")}.String())
	require.Equal(t, "2026-11-26T07:00:01.250Z cron election-failed (candidate): down",
		Event{Type: ElectionFailed, Role: "cron", Time: at, State: Candidate, Err: errors.New("down")}.String())

	// A time from time.Now carries a monotonic reading ("m=+0.0001"); the event never prints it, and %v
	// and log.Print use String.
	now := Event{Type: Acquired, Role: "cron", Time: time.Now(), State: Leader, Term: 1}
	require.Contains(t, now.Time.String(), "m=")
	for _, s := range []string{now.String(), fmt.Sprint(now), fmt.Sprintf("%v", now)} {
		require.NotContains(t, s, "m=")
		require.True(t, strings.HasSuffix(s, " cron acquired term 1 (leader)"), s)
	}
}
