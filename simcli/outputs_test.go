package simcli_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/simcli"
)

// snapshot is every file and directory under root with its content's hash, mode and modification
// time: comparing two snapshots shows whether anything was written, added or removed.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum := "dir"
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:])
		}
		out[p] = sum + " " + info.Mode().String() + " " + info.ModTime().Format(time.RFC3339Nano)
		return nil
	}))
	return out
}

// write creates a file (and its directory) with content, dated an hour ago so that a rewrite shows.
func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(path, old, old))
}

// ageDirs dates every directory under root an hour ago, after its files were written.
func ageDirs(t *testing.T, root string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chtimes(p, old, old)
		}
		return err
	}))
}

func savedHistory(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "reference-redis-partition", "history.jsonl"))
	require.NoError(t, err)
	return string(b)
}

// report acts only on what it is pointed at: a directory like /tmp, holding other jobs' directories
// with report.html, result.json and even Tenure histories in them, is refused and left byte for byte
// and time for time as it was, and so is each of those directories that is not a run simrun wrote.
func TestReportTouchesNothingItDidNotWrite(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	hist := savedHistory(t)
	for _, f := range []string{"report.html", "result.json", "junit.xml", "linearizability.html", "summary.md"} {
		write(t, filepath.Join(root, "other-job", f), "another job's "+f)
	}
	// A run of another job written before markers: report root must not go into it.
	write(t, filepath.Join(root, "old-run", "history.jsonl"), hist)
	write(t, filepath.Join(root, "old-run", "report.html"), "old page")
	write(t, filepath.Join(root, "old-run", "result.json"), "{}")
	// A Tenure history next to a file a run does not write.
	write(t, filepath.Join(root, "notes-run", "history.jsonl"), hist)
	write(t, filepath.Join(root, "notes-run", "notes.txt"), "mine")
	// A history.jsonl that is not Tenure's.
	write(t, filepath.Join(root, "foreign-history", "history.jsonl"), `{"hello":"world"}`+"\n")
	write(t, filepath.Join(root, "foreign-history", "report.html"), "theirs")
	// Runs deeper down, and a directory that looks like a suite but whose index is not simrun's.
	write(t, filepath.Join(root, "deep", "a", "b", "history.jsonl"), hist)
	write(t, filepath.Join(root, "deep", "a", "b", "result.json"), "{}")
	for _, f := range []string{"index.html", "summary.md", "junit.xml"} {
		write(t, filepath.Join(root, "fake-suite", f), "<a href=\"run/report.html\">"+f+"</a>")
	}
	write(t, filepath.Join(root, "fake-suite", "run", "history.jsonl"), hist)
	write(t, filepath.Join(root, "file.txt"), "a file")
	ageDirs(t, root)
	before := snapshot(t, root)

	for _, target := range []string{"", "other-job", "notes-run", "foreign-history", "deep", "deep/a", "fake-suite", "file.txt", "missing"} {
		t.Run("report "+target, func(t *testing.T) {
			code, stdout, stderr := run(t, "report", filepath.Join(root, target))
			require.Equal(t, simcli.ExitUsage, code, stdout+stderr)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
			require.Contains(t, stderr, "is not a directory simrun wrote: expected a run (its history.jsonl), a suite or a matrix")
			require.Contains(t, stderr, "; found ")
			require.Equal(t, before, snapshot(t, root), "report %s changed files", target)
		})
	}

	// The run written before markers is recognised when pointed at, and only its reports are written.
	code, stdout, stderr := run(t, "report", filepath.Join(root, "old-run"))
	require.Equal(t, simcli.ExitOK, code, stdout+stderr)
	after := snapshot(t, root)
	for p, s := range before {
		if !strings.HasPrefix(p, filepath.Join(root, "old-run")) {
			require.Equal(t, s, after[p], "%s changed", p)
		}
	}
	require.Equal(t, before[filepath.Join(root, "old-run", "history.jsonl")], after[filepath.Join(root, "old-run", "history.jsonl")])
	m, err := reports.ReadMarker(filepath.Join(root, "old-run"))
	require.NoError(t, err, "the run is marked now")
	require.Equal(t, reports.KindRun, m.Kind)
}

// --out accepts a new or empty directory, or one simrun wrote of the same kind; anything else is refused
// before anything starts, for every command that writes, and left as it was.
func TestOutRefusesWhatTenureDidNotWrite(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "foreign", "report.html"), "theirs")
	write(t, filepath.Join(root, "foreign", "history.jsonl"), savedHistory(t))
	write(t, filepath.Join(root, "gitrepo", ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(root, "gitrepo", "main.go"), "package main\n")
	write(t, filepath.Join(root, "modroot", "go.mod"), "module example.com/x\n")
	write(t, filepath.Join(root, "a-file"), "x")
	// A run simrun wrote: its history is never replaced.
	write(t, filepath.Join(root, "run", "history.jsonl"), savedHistory(t))
	require.NoError(t, reports.WriteMarker(filepath.Join(root, "run"), reports.Marker{Kind: reports.KindRun}))
	require.NoError(t, reports.WriteMarker(filepath.Join(root, "suite"), reports.Marker{Kind: reports.KindSuite}))
	// A matrix simrun wrote, whose run of reference on single-instance seed 1 is there.
	write(t, filepath.Join(root, "matrix", "reference", "single-instance-1", "history.jsonl"), savedHistory(t))
	require.NoError(t, reports.WriteMarker(filepath.Join(root, "matrix", "reference", "single-instance-1"), reports.Marker{Kind: reports.KindRun}))
	require.NoError(t, reports.WriteMarker(filepath.Join(root, "matrix"), reports.Marker{Kind: reports.KindMatrix, Runs: []string{"reference/single-instance-1"}}))
	ageDirs(t, root)
	before := snapshot(t, root)

	commands := map[string][]string{
		"run":    {"run", "single-instance"},
		"suite":  {"run", "single-instance", "balance-3x9"},
		"matrix": {"matrix", "--systems", "reference", "--scenarios", "single-instance"},
		"bench":  {"bench", "single-instance"},
	}
	for name, tc := range map[string]struct {
		out      string
		commands []string
		want     string
	}{
		"foreign":        {"foreign", []string{"run", "suite", "matrix", "bench"}, "holds files simrun did not write (2 entries: history.jsonl and report.html) and no .tenure.json: give a new or empty directory"},
		"git repository": {"gitrepo", []string{"run", "suite", "matrix", "bench"}, "is a source repository (it holds .git)"},
		"module root":    {"modroot", []string{"run", "suite", "matrix", "bench"}, "is a source repository (it holds go.mod)"},
		"file":           {"a-file", []string{"run", "suite", "matrix", "bench"}, "is a file"},
		"existing run":   {"run", []string{"run"}, "already holds a run (a run's history.jsonl is never replaced)"},
		"other kind":     {"suite", []string{"run", "matrix", "bench"}, "holds a simrun suite, not a"},
		"matrix run":     {"matrix", []string{"matrix"}, "run directory " + filepath.Join(root, "matrix", "reference", "single-instance-1") + " already holds a run"},
	} {
		for _, cmd := range tc.commands {
			t.Run(name+"/"+cmd, func(t *testing.T) {
				args := append(append([]string{}, commands[cmd]...), "--redis", "embedded", "--out", filepath.Join(root, tc.out))
				code, stdout, stderr := run(t, args...)
				require.Equal(t, simcli.ExitUsage, code, stdout+stderr)
				require.Empty(t, stdout, "refused before anything starts")
				require.Contains(t, stderr, tc.want)
				require.Equal(t, before, snapshot(t, root))
			})
		}
	}

	// The repository this test runs in: refused, and nothing is added to it.
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	entries := func() []string {
		es, err := os.ReadDir(repo)
		require.NoError(t, err)
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	was := entries()
	code, _, stderr := run(t, "run", "single-instance", "--redis", "embedded", "--out", repo)
	require.Equal(t, simcli.ExitUsage, code)
	require.Contains(t, stderr, "is a source repository (it holds")
	require.Equal(t, was, entries())
}

// A run into a directory of its own: the directory is marked, a second run into it is refused and the
// first run's history stays as it was.
func TestRerunIntoARunDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // empty: accepted
	code, stdout, stderr := run(t, "run", "single-instance", "--seed", "1", "--redis", "embedded", "--time-scale", "0.05", "--quiet", "--out", dir)
	require.Contains(t, []int{simcli.ExitOK, simcli.ExitViolated}, code, stdout+stderr) // the verdict is not what is tested
	require.FileExists(t, filepath.Join(dir, "history.jsonl"))
	m, err := reports.ReadMarker(dir)
	require.NoError(t, err)
	require.Equal(t, reports.KindRun, m.Kind)
	before := snapshot(t, dir)
	code, stdout, stderr = run(t, "run", "single-instance", "--seed", "2", "--redis", "embedded", "--time-scale", "0.05", "--quiet", "--out", dir)
	require.Equal(t, simcli.ExitUsage, code, stdout+stderr)
	require.Contains(t, stderr, "already holds a run")
	require.Equal(t, before, snapshot(t, dir))
}

// The matrix end to end: --markdown puts the table alone on stdout, its columns follow --scenarios, its
// replay commands name the backend that ran, and report re-renders the matrix directory it wrote to the
// same table, leaving the histories as they were.
func TestMatrixDirectoryReportsAgain(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	out := filepath.Join(t.TempDir(), "m")
	code, stdout, stderr := run(t, "matrix", "--systems", "reference,naive", "--scenarios", "balance-3x9,single-instance",
		"--redis", "auto", "--time-scale", "0.05", "--markdown", "--out", out)
	require.Contains(t, []int{simcli.ExitOK, simcli.ExitViolated}, code, stdout+stderr) // the verdicts are not what is tested
	matrixCode := code
	require.True(t, strings.HasPrefix(stdout, "\n### "), "the badge first: "+stdout)
	require.Contains(t, stdout, "\nLease systems:\n\n| system | balance-3x9 | single-instance |\n")
	for _, progress := range []string{"\n  PASS ", "\n  FAIL ", "matrix: 2 systems", "runs ("} {
		require.NotContains(t, stdout, progress, "progress goes to stderr")
	}
	require.Contains(t, stderr, "matrix: 2 systems × 2 scenarios")
	require.Regexp(t, `(PASS|FAIL) reference / single-instance seed 1`, stderr)

	m, err := reports.ReadMarker(out)
	require.NoError(t, err)
	require.Equal(t, reports.KindMatrix, m.Kind)
	require.Equal(t, []string{"reference/balance-3x9-1", "reference/single-instance-1", "naive/balance-3x9-1", "naive/single-instance-1"}, m.Runs)
	for _, r := range m.Runs {
		b, err := os.ReadFile(filepath.Join(out, r, "result.json"))
		require.NoError(t, err)
		var res struct{ Command string }
		require.NoError(t, json.Unmarshal(b, &res))
		require.Contains(t, res.Command, "--redis server", "the replay names the backend auto chose")
		require.NotContains(t, res.Command, "auto")
	}

	table, err := os.ReadFile(filepath.Join(out, "matrix.md"))
	require.NoError(t, err)
	// The index is the grid, and its badge says what the exit status says.
	idx, err := os.ReadFile(filepath.Join(out, "index.html"))
	require.NoError(t, err)
	badge := map[int]string{simcli.ExitOK: "PASSED", simcli.ExitViolated: "FAILED", simcli.ExitInconclusive: "INCONCLUSIVE"}[matrixCode]
	require.Contains(t, string(idx), `id="verdict">`+badge+`</span>`)
	require.Contains(t, string(idx), `<table class="matrix">`)
	histories := map[string]string{}
	for _, r := range m.Runs {
		p := filepath.Join(out, r, "history.jsonl")
		histories[p] = snapshot(t, p)[p]
	}
	code, stdout, stderr = run(t, "report", out)
	require.Equal(t, matrixCode, code, stdout+stderr)
	require.Regexp(t, `reference\n  balance-3x9 .*\n  single-instance .*\nnaive\n`, stdout)
	again, err := os.ReadFile(filepath.Join(out, "matrix.md"))
	require.NoError(t, err)
	require.Equal(t, string(table), string(again))
	for p, s := range histories {
		require.Equal(t, s, snapshot(t, p)[p], "%s was rewritten", p)
	}
}
