package reports

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func touch(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestMarkerRoundTripAndRefusals(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadMarker(dir)
	require.ErrorIs(t, err, ErrNoMarker)

	require.NoError(t, WriteMarker(dir, Marker{Kind: KindMatrix, Runs: []string{"reference/gc-pause-1", "naive/gc-pause-1"}}))
	m, err := ReadMarker(dir)
	require.NoError(t, err)
	require.Equal(t, KindMatrix, m.Kind)
	require.Equal(t, []string{"reference/gc-pause-1", "naive/gc-pause-1"}, m.Runs)
	require.Equal(t, MarkerSchemaVersion, m.Schema)
	st, err := os.Stat(filepath.Join(dir, FileMarker))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	leftovers, err := filepath.Glob(filepath.Join(dir, FileMarker+".*"))
	require.NoError(t, err)
	require.Empty(t, leftovers, "no temporary file is left")

	require.Error(t, WriteMarker(dir, Marker{Kind: "mine"}))
	require.Error(t, WriteMarker(dir, Marker{Kind: KindSuite, Runs: []string{"../elsewhere"}}))
	require.Error(t, WriteMarker(dir, Marker{Kind: KindSuite, Runs: []string{"/tmp"}}))
	require.Error(t, WriteMarker(dir, Marker{Kind: KindRun, Runs: []string{"x"}}))

	for name, content := range map[string]string{
		"newer":        `{"tenure_output": 99, "kind": "run"}`,
		"no version":   `{"kind": "run"}`,
		"unknown kind": `{"tenure_output": 1, "kind": "mine"}`,
		"escapes":      `{"tenure_output": 1, "kind": "suite", "runs": ["../../etc"]}`,
		"not json":     `hello`,
	} {
		d := t.TempDir()
		touch(t, filepath.Join(d, FileMarker), content)
		_, err := ReadMarker(d)
		require.Error(t, err, name)
		require.NotErrorIs(t, err, ErrNoMarker, name)
	}
}

func TestCheckOut(t *testing.T) {
	root := t.TempDir()
	touch(t, filepath.Join(root, "foreign", "notes.txt"), "mine")
	touch(t, filepath.Join(root, "repo", "go.mod"), "module x\n")
	touch(t, filepath.Join(root, "git", ".git", "HEAD"), "")
	touch(t, filepath.Join(root, "file"), "")
	require.NoError(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
	require.NoError(t, WriteMarker(filepath.Join(root, "run-empty"), Marker{Kind: KindRun}))
	require.NoError(t, WriteMarker(filepath.Join(root, "run-full"), Marker{Kind: KindRun}))
	touch(t, filepath.Join(root, "run-full", FileHistory), "{}\n")
	require.NoError(t, WriteMarker(filepath.Join(root, "suite"), Marker{Kind: KindSuite, Runs: []string{"a"}}))
	require.NoError(t, WriteMarker(filepath.Join(root, "marked-repo"), Marker{Kind: KindSuite}))
	touch(t, filepath.Join(root, "marked-repo", "go.mod"), "module x\n")

	for _, tc := range []struct {
		dir  string
		kind Kind
		want string // "" accepted
	}{
		{"new", KindRun, ""},
		{"new/deeper", KindSuite, ""},
		{"empty", KindMatrix, ""},
		{"run-empty", KindRun, ""},
		{"suite", KindSuite, ""},
		{"foreign", KindRun, "holds files simrun did not write (1 entry: notes.txt)"},
		{"repo", KindRun, "is a source repository (it holds go.mod)"},
		{"git", KindSuite, "is a source repository (it holds .git)"},
		{"marked-repo", KindSuite, "is a source repository (it holds go.mod)"},
		{"file", KindRun, "is a file"},
		{"run-full", KindRun, "already holds a run"},
		{"suite", KindRun, "holds a simrun suite, not a run"},
		{"run-empty", KindMatrix, "holds a simrun run, not a matrix"},
	} {
		err := CheckOut(filepath.Join(root, tc.dir), tc.kind)
		if tc.want == "" {
			require.NoError(t, err, "%s as %s", tc.dir, tc.kind)
			continue
		}
		require.ErrorIs(t, err, ErrOutRefused, "%s as %s", tc.dir, tc.kind)
		require.Contains(t, err.Error(), tc.want, "%s as %s", tc.dir, tc.kind)
		require.Contains(t, err.Error(), filepath.Join(root, tc.dir))
	}
	_, err := os.Stat(filepath.Join(root, "new"))
	require.True(t, os.IsNotExist(err), "CheckOut writes nothing")
}

func TestIdentify(t *testing.T) {
	root := t.TempDir()
	hist := string(mustRead(t, filepath.Join(savedRun, FileHistory)))

	require.NoError(t, WriteMarker(filepath.Join(root, "marked"), Marker{Kind: KindBench, Runs: []string{"x-1"}}))
	touch(t, filepath.Join(root, "legacy-run", FileHistory), hist)
	touch(t, filepath.Join(root, "legacy-run", FileReport), "")
	touch(t, filepath.Join(root, "legacy-run", FileLog), "")
	touch(t, filepath.Join(root, "history-alone", FileHistory), hist)
	touch(t, filepath.Join(root, "history-and-notes", FileHistory), hist)
	touch(t, filepath.Join(root, "history-and-notes", "notes.txt"), "")
	touch(t, filepath.Join(root, "foreign-history", FileHistory), `{"schema":1}`+"\n")
	touch(t, filepath.Join(root, "no-history", FileReport), "")
	require.NoError(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))

	// A suite written before markers: WriteSuite's files, its marker taken away.
	r := synthRun(synthConfig{instances: 2, endpoints: 2, dur: 5 * time.Second, ttl: time.Second, poll: 200 * time.Millisecond, seed: 3})
	legacy := filepath.Join(root, "legacy-suite")
	var entries []SuiteEntry
	for _, rel := range []string{"a b", "nested/c"} {
		require.NoError(t, WriteRun(filepath.Join(legacy, rel), r))
		entries = append(entries, SuiteEntry{Dir: rel, Meta: r.History.Meta, Report: r.Report, Passed: r.Passed})
	}
	require.NoError(t, WriteSuite(legacy, "ci", entries))
	m, err := ReadMarker(legacy)
	require.NoError(t, err)
	require.Equal(t, Marker{Schema: 1, Kind: KindSuite, Runs: []string{"a b", "nested/c"}}, m, "WriteSuite marks what it indexes")
	require.NoError(t, os.Remove(filepath.Join(legacy, FileMarker)))
	// The same with a file beside it that a suite does not write: not recognised.
	touch(t, filepath.Join(root, "suite-and-notes", "notes.txt"), "")
	for _, f := range []string{FileIndex, FileSummary, FileJUnit} {
		touch(t, filepath.Join(root, "suite-and-notes", f), string(mustRead(t, filepath.Join(legacy, f))))
	}

	for _, tc := range []struct {
		dir    string
		kind   Kind
		runs   []string
		legacy bool
		want   string
	}{
		{dir: "marked", kind: KindBench, runs: []string{"x-1"}},
		{dir: "legacy-run", kind: KindRun, legacy: true},
		{dir: "history-alone", kind: KindRun, legacy: true},
		{dir: "legacy-suite", kind: KindSuite, runs: []string{"a b", "nested/c"}, legacy: true},
		{dir: "legacy-suite/nested/c", kind: KindRun},
		{dir: "history-and-notes", want: "found a history.jsonl next to entries a run does not write (notes.txt)"},
		{dir: "foreign-history", want: "is not a Tenure history header"},
		{dir: "no-history", want: "found no .tenure.json and no history.jsonl among its 1 entry: report.html"},
		{dir: "suite-and-notes", want: "found no .tenure.json and no history.jsonl among its 4 entries"},
		{dir: "empty", want: "found an empty directory"},
		{dir: "missing", want: "found nothing: it does not exist"},
		{dir: ".", want: "found no .tenure.json"},
	} {
		f, err := Identify(filepath.Join(root, tc.dir))
		if tc.want != "" {
			require.ErrorIs(t, err, ErrNotOutput, tc.dir)
			require.Contains(t, err.Error(), "is not a directory simrun wrote: expected a run", tc.dir)
			require.Contains(t, err.Error(), tc.want, tc.dir)
			continue
		}
		require.NoError(t, err, tc.dir)
		require.Equal(t, tc.kind, f.Kind, tc.dir)
		require.Equal(t, tc.runs, f.Runs, tc.dir)
		require.Equal(t, tc.legacy, f.Legacy, tc.dir)
	}
}

// A suite index whose links lead outside its directory is not taken as a suite.
func TestIndexRunsStayInside(t *testing.T) {
	dir := t.TempDir()
	row := func(href string) string {
		return `<table class="suite"><tr class="run pass"><td class="nowrap"><a href="` + href + `/report.html">x</a>`
	}
	touch(t, filepath.Join(dir, "ok.html"), row("a%20b/c"))
	runs, ok := indexRuns(filepath.Join(dir, "ok.html"))
	require.True(t, ok)
	require.Equal(t, []string{"a b/c"}, runs)
	for _, href := range []string{"..", "../x", "a/../../x", "/etc", "%2E%2E"} {
		touch(t, filepath.Join(dir, "bad.html"), row(href))
		_, ok := indexRuns(filepath.Join(dir, "bad.html"))
		require.False(t, ok, href)
	}
}

// WriteRun and WriteSuite mark what they write, and never write into a directory marked as holding
// something else.
func TestWritersMarkAndRespectMarkers(t *testing.T) {
	r := synthRun(synthConfig{instances: 2, endpoints: 2, dur: 5 * time.Second, ttl: time.Second, poll: 200 * time.Millisecond, seed: 4})
	root := t.TempDir()
	require.NoError(t, WriteRun(filepath.Join(root, "run"), r))
	m, err := ReadMarker(filepath.Join(root, "run"))
	require.NoError(t, err)
	require.Equal(t, KindRun, m.Kind)

	require.ErrorIs(t, WriteSuite(filepath.Join(root, "run"), "ci", nil), ErrOutRefused, "a run's directory is not a suite's")
	_, err = os.Stat(filepath.Join(root, "run", FileIndex))
	require.True(t, os.IsNotExist(err))

	require.NoError(t, WriteMarker(filepath.Join(root, "matrix"), Marker{Kind: KindMatrix, Runs: []string{"x"}}))
	require.ErrorIs(t, WriteRun(filepath.Join(root, "matrix"), r), ErrOutRefused, "a matrix's directory is not a run's")
	_, err = os.Stat(filepath.Join(root, "matrix", FileHistory))
	require.True(t, os.IsNotExist(err))
	require.NoError(t, WriteSuite(filepath.Join(root, "matrix"), "matrix", nil))
	m, err = ReadMarker(filepath.Join(root, "matrix"))
	require.NoError(t, err)
	require.Equal(t, Marker{Schema: 1, Kind: KindMatrix, Runs: []string{"x"}}, m, "a collection's own marker is kept")
}
