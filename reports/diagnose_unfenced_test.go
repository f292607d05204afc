package reports

import (
	"testing"

	"github.com/stretchr/testify/require"
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
