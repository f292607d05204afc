package reports

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The naive system under a partition: the diagnosis tells, in two groups, that i0 went on polling to
// the end of the run after i1 took over, why (the partition, failed calls, no deadline, unconditional
// renewals that cannot confirm a lease already lost), and the balance violation; summary.md says the
// same. Every violation belongs to exactly one group, and the page shows at most three cards per group.
func TestDiagnosisNaivePartition(t *testing.T) {
	dir, r := failingNaiveReport(t)
	m := buildModel(r)
	require.Empty(t, m.truncated(), "every violation is listed")
	require.Len(t, m.diag, 2)
	seen := 0
	for gi, g := range m.diag {
		seen += len(g.viols)
		for _, vi := range g.viols {
			require.Equal(t, gi, m.viols[vi].group)
		}
	}
	require.Equal(t, len(m.viols), seen)

	want := []string{
		"Kept polling 9 endpoints (ep-0 … ep-8) after i1…341e took over: 81 polls from 9.64s to the end of the run; " +
			"it and i1…341e both believed they held them from 9.17s to the end of the run; 90 of its polls lay outside its confirmed lease, " +
			"from 9.04s to the end of the run. Likely cause: f1 partition hit it from 6.11s to 11.1s; its backend calls failed from 7.04s " +
			"(i/o timeout); it did not stop (it reports no local deadline); its renewals are unconditional (they name no holder), so none " +
			"confirms a lease it had already lost.",
		"balance (1 violation) at 13.6s 9 endpoints over 3 instances should be 3..3 each, but i0…0442 holds 0, i1…341e holds 9, i2…9b8e holds 0",
	}
	page := checkReportPage(t, dir, r)
	items := page.byID("diagnosis").byName("li")
	require.Len(t, items, len(want))
	for i, w := range want {
		require.Contains(t, strings.Join(strings.Fields(items[i].text.String()), " "), w)
	}
	for _, g := range page.byClass("vgroup") {
		require.LessOrEqual(t, len(g.byClass("viol")), maxCardsPerGroup)
	}
	md := string(mustRead(t, filepath.Join(dir, FileSummary)))
	require.Contains(t, md, "- **i0…0442** (180 violations): Kept polling 9 endpoints (ep-0 … ep-8) after i1…341e took over")

	// Every violation is marked on the timeline, most of them in density bands.
	ov := page.svg("overview")
	require.Equal(t, len(m.viols), marked(ov, "vmark"))
	require.NotEmpty(t, ov.byClass("vband"))
	require.Len(t, page.svg("balance").byClass("vmark-balance"), 1, "the balance violation is marked on the balance chart")
}

// A holder frozen by a pause: the diagnosis names the pause and says only fencing could have stopped it;
// the other invariants' violations are told apart, one group each.
func TestDiagnosisPausedHolder(t *testing.T) {
	r := synthRun(defaultSynth())
	m := buildModel(r)
	require.NotEmpty(t, m.diag)
	g := m.diag[0]
	require.Contains(t, g.text, "Kept polling endpoint ")
	require.Contains(t, g.text, "instance-pause hit it from")
	require.Contains(t, g.text, "it was paused, and a process frozen between its check and its action can only be stopped by fencing")
	for _, g := range m.diag[1:] {
		inv := m.viols[g.viols[0]].invariant
		for _, vi := range g.viols {
			require.Equal(t, inv, m.viols[vi].invariant, "a group without an offender holds one invariant")
		}
	}
}
