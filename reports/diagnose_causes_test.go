package reports

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// A paused holder whose polls carry no fencing token: the diagnosis says that it does not use the one
// thing that could have stopped it; with tokens, it does not say so.
func TestDiagnosisPausedHolderWithoutTokens(t *testing.T) {
	const unused = "which it does not use (its polls carry no token)"
	r := synthRun(defaultSynth())
	fenced := buildModel(r)
	require.Contains(t, fenced.diag[0].text, "can only be stopped by fencing")
	require.NotContains(t, fenced.diag[0].text, unused)

	for i := range r.History.Events {
		if p := r.History.Events[i].Poll; p != nil {
			p.Token, p.MaxToken = 0, 0
		}
	}
	unfenced := buildModel(r)
	require.Contains(t, unfenced.diag[0].text, "can only be stopped by fencing, "+unused)
}

// asyncioOutageRun is the history of `simrun run election-backend-outage-redis --seed 1 --system
// exec:examples/asyncio-election`: the leader keeps leading through the outage's errors and acts after
// its key expired; nobody else leads, so its violations are its actions outside its lease and its belief
// outliving its key (it keeps time, and reports no deadline).
const asyncioOutageRun = "testdata/election-outage-asyncio"

// A holder whose polls lay outside its lease: the diagnosis looks for causes before the first of them
// (the outage, the failed calls) and says that it has no local deadline.
func TestDiagnosisOutsideLeaseOnly(t *testing.T) {
	text := diagnosisOf(t, asyncioOutageRun, "lay outside its confirmed lease")
	require.Contains(t, text, "f1 outage hit it from")
	require.Contains(t, text, "its backend calls failed from")
	require.Contains(t, text, "it reports no local deadline, so nothing stopped it when its lease lapsed")
}

// asyncioRestartRun is the history of `simrun run redis-restart-empty --seed 692591474 --exec 'python3
// examples/asyncio-election/instance.py'`: Redis restarts empty under the leader of every role, a
// standby is elected at its next tick, and the leader believes on until its next GET.
const asyncioRestartRun = "testdata/restart-empty-asyncio"

// A holder without a local deadline whose key a wipe removed: the diagnosis names the wipe as well as
// the missing deadline.
func TestDiagnosisNoDeadlineNamesTheWipe(t *testing.T) {
	text := diagnosisOf(t, asyncioRestartRun, "both believed they held")
	require.Contains(t, text, "it reports no local deadline, so it went on until it learned of the loss at")
	require.Contains(t, text, "wiped the backend while its lease was still valid")
}

// diagnosisOf checks a saved history as simrun does and returns the text of its first diagnosis group
// that says what, failing the test when none does (a run may have several: the stale belief that comes
// with a poll outside the lease is its own finding).
func diagnosisOf(t *testing.T, dir, what string) string {
	t.Helper()
	h, err := history.ReadFile(filepath.Join(dir, FileHistory))
	require.NoError(t, err)
	opts := checker.DefaultOptions()
	opts.MaxViolations = MaxListedViolations
	m := buildModel(Run{History: h, Report: checker.Check(h, opts)})
	require.NotEmpty(t, m.diag)
	var texts []string
	for _, d := range m.diag {
		if strings.Contains(d.text, what) {
			return d.text
		}
		texts = append(texts, d.text)
	}
	require.Failf(t, "no diagnosis says "+what, "%s", strings.Join(texts, "\n"))
	return ""
}
