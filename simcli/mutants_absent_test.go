//go:build !tenure_mutants

package simcli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/simcli"
)

// A simrun built without the mutants says, when asked for one, how to build one that has them.
func TestAbsentMutantIsAUsageErrorSayingHowToBuildOne(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := run(t, "run", "crash-failover", "--system", "mutant-no-deadline", "--out", out)
	require.Equal(t, simcli.ExitUsage, code, stderr)
	require.Contains(t, stderr, `unknown system "mutant-no-deadline"`)
	require.Contains(t, stderr, "go build -tags tenure_mutants -o bin/simrun ./cmd/simrun")
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "a bad invocation must leave no output behind")
}
