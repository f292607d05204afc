package simcli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVirtualMatrixComparesWithAnother runs a small matrix in virtual time (in a process of its own, as
// a user runs it), then compares it with itself, with a real side that disagrees, and with one that
// lacks a cell; and runs the cells of one matrix again through --cells-of.
func TestVirtualMatrixComparesWithAnother(t *testing.T) {
	dir := t.TempDir()
	code, out := simrunIn(t, dir, "matrix", "--virtual", "--systems", "reference,naive,redlock",
		"--scenarios", "crash-failover,redis-partition,redis-restart-aof", "--seeds", "2", "--out", "m")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "in virtual time")
	require.Contains(t, out, "--time-scale 1 --system naive --virtual", "replay lines run in virtual time")
	index, err := os.ReadFile(filepath.Join(dir, "m", "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(index), "system redlock needs independent Redis nodes", "the note says why redlock's row is blank")
	require.Contains(t, string(index), "append-only file")

	tsv, err := os.ReadFile(filepath.Join(dir, "m", "verdicts.tsv"))
	require.NoError(t, err)
	lines := dataLines(string(tsv))
	require.Len(t, lines, 8, "four cells held, two seeds each:\n%s", tsv)
	require.Contains(t, lines, "reference\tcrash-failover\t1\tpass\t-")
	for _, l := range lines {
		if strings.HasPrefix(l, "naive\tredis-partition\t") {
			require.Contains(t, l, "\tfail\t", "naive's characteristic cell fails")
			require.Contains(t, l, "two-holders")
		}
	}

	code, out = simrunIn(t, dir, "matrix", "compare", "m", "m")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "4 cells compared: 4 agree, 0 by rate, 0 DISAGREE")

	// A real side on which naive passed its partition on every seed, and the reference failed.
	var flipped []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "naive\tredis-partition\t"):
			f := strings.Split(l, "\t")
			l = strings.Join([]string{f[0], f[1], f[2], "pass", "-"}, "\t")
		case strings.HasPrefix(l, "reference\tcrash-failover\t1\t"):
			l = "reference\tcrash-failover\t1\tfail\tfailover>bound"
		}
		flipped = append(flipped, l)
	}
	writeLines(t, filepath.Join(dir, "real.tsv"), flipped)
	code, out = simrunIn(t, dir, "matrix", "compare", "real.tsv", "m")
	require.Equal(t, 1, code, out)
	require.Regexp(t, `naive +redis-partition +DISAGREE +pass 2/2 +fail 2/2 .*two-holders`, out)
	require.Regexp(t, `reference +crash-failover +rate, REFERENCE FAILED +fail 1/2 failover>bound +pass 2/2`, out)

	// A real side that never ran a cell the virtual one did: not covered, so not a pass.
	var partial []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "reference\tredis-partition\t") {
			partial = append(partial, l)
		}
	}
	writeLines(t, filepath.Join(dir, "partial.tsv"), partial)
	code, out = simrunIn(t, dir, "matrix", "compare", "partial.tsv", "m")
	require.Equal(t, 3, code, out)
	require.Regexp(t, `reference +redis-partition +uncovered +no verdict`, out)

	// --cells-of runs exactly the cells another matrix ran.
	code, out = simrunIn(t, dir, "matrix", "--virtual", "--cells-of", "partial.tsv", "--out", "again")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "3 cells")
}

func TestMatrixCompareRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "bad.tsv"), []string{"# header", "reference\tcrash-failover\tone\tpass\t-"})
	writeLines(t, filepath.Join(dir, "short.tsv"), []string{"reference\tcrash-failover\t1\tpass"})
	writeLines(t, filepath.Join(dir, "word.tsv"), []string{"reference\tcrash-failover\t1\tpassed\t-"})
	for args, says := range map[string]string{
		"compare":                         "takes two matrices",
		"compare bad.tsv":                 "takes two matrices",
		"compare --x bad.tsv":             "takes two matrices",
		"compare nothere bad.tsv":         "neither a matrix's directory nor a verdicts file",
		"compare bad.tsv bad.tsv":         `line 2: seed "one" is not a number`,
		"compare short.tsv short.tsv":     "line 1: 4 fields",
		"compare word.tsv word.tsv":       `outcome "passed" is none of pass, fail, inconclusive, error`,
		"compare . word.tsv":              "holds no matrix run",
		"verdicts":                        "takes one matrix directory",
		"--virtual --parallel 2":          "--parallel has no use with --virtual",
		"--virtual --redis server":        "--redis names a real part",
		"--suite ci --scenarios gc-pause": "give one of them",
		"--cells-of nothere":              "--cells-of",
		"--virtual compare a b":           "takes no flags before it",
	} {
		code, out := simrunIn(t, dir, append([]string{"matrix"}, strings.Fields(args)...)...)
		require.Equal(t, 2, code, "%s: %s", args, out)
		require.Contains(t, out, says, args)
	}
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 3, "a refused command left something behind")
}

func dataLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}
