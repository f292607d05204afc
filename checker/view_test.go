package checker

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// specMeta is the specification's timing (lease TTL 30 s, renewals, heartbeats and discovery every 10 s,
// calls bounded by 3 s, polls of 1 s every 5 s).
func specMeta() history.Meta {
	s := time.Second
	return history.Meta{Schema: history.SchemaVersion, Scenario: "bounds", Kind: "lease", LeaseTTL: 30 * s, PollInterval: 5 * s,
		DiscoveryInterval: 10 * s, FailoverBound: SpecFailoverBound(30 * s),
		Assumptions: history.Assumptions{DriftBound: 0.01, Persistence: "none", Topology: "single"},
		Timing:      &history.Timing{RenewInterval: 10 * s, HeartbeatInterval: 10 * s, HeartbeatTTL: 30 * s, OpTimeout: 3 * s, PollDuration: s}}
}

// The table's rows are what the model derives: a crash, a cut, a pause and a hold past the TTL at the
// specification's bound (the holder wrote until the fault); a blind holder's next renewal lands unseen and
// lasts a TTL from when its caller gave up; a stop hands over after its poll in flight; a data loss holds
// grants a TTL after a system can learn of it.
func TestBoundTable(t *testing.T) {
	s := time.Second
	want := map[string]time.Duration{
		"the holder crashes": 30*s + 102*time.Millisecond, "the holder stops gracefully and releases": s + 101*time.Millisecond,
		"the holder is cut off (both ways) for longer than a TTL":                             30*s + 102*time.Millisecond,
		"the holder's replies are lost for longer than a TTL: its next renewal lands unseen":  43*s + 100*time.Millisecond,
		"the holder's requests are held for 1.5 TTL: its next renewal lands after it gave up": 30*s + 102*time.Millisecond,
		"the holder freezes for 1.5 TTL":                                                      30*s + 102*time.Millisecond,
		"Redis restarts empty, down for a tenth of a TTL":                                     46*s + 101*time.Millisecond,
		"a replica is promoted a tenth of a TTL after the primary is killed":                  46*s + 101*time.Millisecond,
	}
	rows := BoundTable(specMeta())
	require.Len(t, rows, len(want))
	for _, r := range rows {
		require.Equal(t, want[r.Situation].Round(time.Millisecond), r.After.Round(time.Millisecond), "%s: %s", r.Situation, r.Why)
	}
	require.LessOrEqual(t, rows[0].After, SpecFailoverBound(30*s)+ms(2), "a crash is held to the specification's bound")
}

// The bound table in docs/bounds.md is the model's, at the specification's timing.
func TestBoundTableInDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/bounds.md")
	require.NoError(t, err)
	doc := string(b)
	const start, end = "<!-- bound table: from checker.BoundTable at the specification's timing -->\n", "<!-- end of bound table -->"
	i, j := strings.Index(doc, start), strings.Index(doc, end)
	require.True(t, i >= 0 && j > i, "docs/bounds.md has no bound table markers")
	want := BoundTableMarkdown(BoundTable(specMeta()))
	require.Equal(t, want, doc[i+len(start):j], "docs/bounds.md's table is not the model's; it should read:\n%s", want)
}
