package simcli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/pgtest"
	"github.com/tenurelabs/tenure/internal/redistest"
	_ "github.com/tenurelabs/tenure/systems/baselines"
	_ "github.com/tenurelabs/tenure/systems/peers"
)

// The matrix's shape on a small fixed subset: each reference system passes, and each baseline and peer
// library fails the cell its design is known to be weak in, by one of the invariants that weakness breaks.
func TestMatrixShape(t *testing.T) {
	if testing.Short() {
		t.Skip("runs eleven scenarios")
	}
	redistest.Start(t) // skips (or fails under TENURE_REQUIRE_REDIS) without redis-server
	pgtest.Connect(t)  // likewise for PostgreSQL
	expect := []struct {
		system, scenario string
		// failsWith lists the cell words of which at least one must appear; nil means the cell passes.
		failsWith []string
	}{
		{"reference", "gc-pause", nil},
		{"spec-naive", "gc-pause", []string{"double-poll"}},
		{"election-redis", "election-renewal-gap-redis", nil},
		{"getexpire", "election-renewal-gap-redis", []string{"two-holders", "double-poll", "outside-lease"}},
		{"election-redis", "election-leader-partition-redis", nil},
		{"heartbeat-takeover", "election-leader-partition-redis", []string{"two-holders", "double-poll"}},
		{"election-postgres", "election-conn-reset-pg", nil},
		{"pg-advisory", "election-conn-reset-pg", []string{"two-holders", "double-poll"}},
		// The peer libraries have no guard against a Redis that comes back empty.
		{"reference", "redis-restart-empty", nil},
		{"redislock", "redis-restart-empty", []string{"two-holders", "double-poll"}},
		{"redsync", "redis-restart-empty", []string{"two-holders", "double-poll"}},
	}
	f := matrixFlags{cells: map[[2]string]bool{}, seeds: 1}
	var systems, scens []string
	for _, e := range expect {
		f.cells[[2]string{e.system, e.scenario}] = true
		systems = appendNew(systems, e.system)
		scens = appendNew(scens, e.scenario)
	}
	f.systems, f.scenarios = strings.Join(systems, ","), strings.Join(scens, ",")
	f.run.redis, f.run.out, f.run.parallel = "server", filepath.Join(t.TempDir(), "matrix"), 4
	f.run.seed, f.run.seedSet = 1, true

	var out, errb bytes.Buffer
	start := time.Now()
	code, err := runMatrix(context.Background(), f, &out, &errb)
	t.Logf("matrix took %s:\n%s%s", time.Since(start).Round(time.Second), out.String(), errb.String())
	require.NoError(t, err)
	require.Equal(t, ExitOK, code)

	md, err := os.ReadFile(filepath.Join(f.run.out, "matrix.md"))
	require.NoError(t, err)
	table := string(md)
	require.Len(t, strings.Split(strings.SplitN(table, "\n\n", 2)[0], "\n"), 2+len(systems), "one row per system:\n%s", table)
	for _, e := range expect {
		cell := cellOf(t, table, e.system, e.scenario)
		if e.failsWith == nil {
			require.Equal(t, "pass", cell, "%s on %s", e.system, e.scenario)
			continue
		}
		require.NotEqual(t, "pass", cell, "%s must fail %s", e.system, e.scenario)
		found := false
		for _, w := range e.failsWith {
			found = found || strings.Contains(cell, w)
		}
		require.True(t, found, "%s on %s: cell %q names none of %v", e.system, e.scenario, cell, e.failsWith)
		// Every violation is linked to its saved report and listed with a replay command.
		require.Contains(t, cell, "report.html")
		require.Contains(t, table, "replay `simrun run "+e.scenario+" --seed 1")
	}
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// cellOf reads one cell of the Markdown table.
func cellOf(t *testing.T, table, system, scenario string) string {
	t.Helper()
	fields := func(line string) []string {
		parts := strings.Split(line, "|")
		if len(parts) < 3 {
			return nil
		}
		parts = parts[1 : len(parts)-1]
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	lines := strings.Split(table, "\n")
	header := fields(lines[0])
	col := -1
	for i, h := range header {
		if h == scenario {
			col = i
		}
	}
	require.GreaterOrEqual(t, col, 0, "scenario %s is not a column of\n%s", scenario, table)
	for _, l := range lines[2:] {
		if f := fields(l); len(f) == len(header) && f[0] == system {
			return f[col]
		}
	}
	t.Fatalf("system %s is not a row of\n%s", system, table)
	return ""
}
