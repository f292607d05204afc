package sim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
)

func TestSplitCommandSplitsAsAShellWould(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		`python3 instance.py`:             {"python3", "instance.py"},
		`  node   a.js  --x=1 `:           {"node", "a.js", "--x=1"},
		`sh -c 'echo "hi there"; exit 3'`: {"sh", "-c", `echo "hi there"; exit 3`},
		`a "b c" d\ e`:                    {"a", "b c", "d e"},
		`a "x\"y\\z\$\n" 'it''s'`:         {"a", `x"y\z$\n`, "its"},
		`a '' ""`:                         {"a", "", ""},
		`p $HOME *.py > out`:              {"p", "$HOME", "*.py", ">", "out"},
		"a\\\nb":                          {"ab"},
		`prog "with 'single' inside" 'and "double"'`: {"prog", "with 'single' inside", `and "double"`},
	} {
		got, err := sim.SplitCommand(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for in, want := range map[string]string{
		``:          "the command is empty",
		`   `:       "the command is empty",
		`a 'b`:      "the ' quote at character 3 is never closed",
		`a "b\"`:    `the " quote at character 3 is never closed`,
		`trailing\`: "lone backslash",
	} {
		_, err := sim.SplitCommand(in)
		require.ErrorContains(t, err, want, in)
	}
}

// writeSystem writes a system file into a directory of its own and returns the directory.
func writeSystem(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, sim.SystemFileName), []byte(body), 0o644))
	return dir
}

func TestSystemFileIsReadWithItsPathsAndScripts(t *testing.T) {
	t.Parallel()
	dir := writeSystem(t, `{
		"name": "my-lock", "description": "a lock of mine", "kind": "election",
		"command": ["./run.sh", "--fast"], "dir": "bin", "env": {"PYTHONUNBUFFERED": "1"},
		"ready_timeout_ms": 2500, "topology": "independent",
		"capabilities": {"beliefs": true, "fencing": true, "faketime": false},
		"scripts": [{"name": "my release", "source": "return redis.call('del', KEYS[1])", "op": "release", "ok": {"int": 1}}]
	}`)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	for _, name := range []string{sim.ExecPrefix + dir, sim.ExecPrefix + filepath.Join(dir, sim.SystemFileName)} {
		s, err := sim.Lookup(name)
		require.NoError(t, err)
		ps := s.(*sim.ProcessSystem)
		require.Equal(t, "my-lock", ps.Name())
		require.Equal(t, "election", ps.Kind())
		require.Equal(t, "a lock of mine", ps.Description())
		require.Equal(t, sim.TopologyIndependent, ps.Topology())
		require.Equal(t, []string{filepath.Join(dir, "bin", "run.sh"), "--fast"}, ps.Command(), "a relative program is taken from dir")
		require.Equal(t, name, ps.Ref())
		require.True(t, ps.Capabilities().Beliefs)
		op, ok := ps.Classify([]any{"eval", "return redis.call('del', KEYS[1])", "1", "poll:lease:ep-0", "me"}, int64(1), nil)
		require.True(t, ok, "the file's own script is classified")
		require.Equal(t, "release", string(op.Kind))
		_, ok = ps.Classify(append([]any{"evalsha"}, sim.LibraryScripts()[0].SHA1[0], "1", "k", "v", "1000"), int64(1), nil)
		require.True(t, ok, "the built-in catalogue comes with every process system")
	}
}

// Every mistake in a system file is refused with the file's name and the field at fault.
func TestSystemFileMistakesNameTheFileAndTheField(t *testing.T) {
	t.Parallel()
	good := `"name": "x", "kind": "lease", "command": ["sh"]`
	for name, tc := range map[string]struct{ body, want string }{
		"unknown field":        {`{` + good + `, "comand": ["sh"]}`, `unknown field "comand"`},
		"unknown capability":   {`{` + good + `, "capabilities": {"fencng": true}}`, `unknown field "capabilities.fencng"`},
		"unknown script field": {`{` + good + `, "scripts": [{"name": "a", "source": "x", "op": "read"}, {"nme": "b"}]}`, `unknown field "scripts[1].nme"`},
		"bad script":           {`{` + good + `, "scripts": [{"name": "a", "source": "x", "op": "grab"}]}`, `field "scripts[0]": script "a": op "grab"`},
		"missing name":         {`{"kind": "lease", "command": ["sh"]}`, `field "name": missing`},
		"bad name":             {`{"name": "my lock", "kind": "lease", "command": ["sh"]}`, `field "name": "my lock"`},
		"missing kind":         {`{"name": "x", "command": ["sh"]}`, `field "kind": missing`},
		"bad kind":             {`{"name": "x", "kind": "leases", "command": ["sh"]}`, `field "kind": "leases": want "lease" or "election"`},
		"missing command":      {`{"name": "x", "kind": "lease"}`, `field "command": missing`},
		"empty command":        {`{"name": "x", "kind": "lease", "command": []}`, `field "command": missing`},
		"command not found":    {`{"name": "x", "kind": "lease", "command": ["no-such-program-here"]}`, `field "command": cannot run "no-such-program-here"`},
		"command a string":     {`{"name": "x", "kind": "lease", "command": "sh x"}`, `field "command": want []string, got a JSON string`},
		"protocol variable":    {`{` + good + `, "env": {"TENURE_SEED": "1"}}`, `field "env": TENURE_SEED: TENURE_* variables are the protocol's`},
		"bad topology":         {`{` + good + `, "topology": "sentinel"}`, `field "topology": "sentinel"`},
		"ready timeout":        {`{` + good + `, "ready_timeout_ms": 0}`, `field "ready_timeout_ms": 0`},
		"missing dir":          {`{` + good + `, "dir": "nope"}`, `field "dir"`},
		"not JSON":             {`{` + good, `not valid JSON`},
		"two values":           {`{` + good + `} {}`, `more than one JSON value`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeSystem(t, tc.body)
			_, err := sim.Lookup(sim.ExecPrefix + dir)
			require.Error(t, err)
			require.Contains(t, err.Error(), filepath.Join(dir, sim.SystemFileName))
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := sim.Lookup(sim.ExecPrefix + filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "does not exist")
}

func TestExecSystemNeedsARunnableCommand(t *testing.T) {
	t.Parallel()
	s, err := sim.NewExecSystem(`sh -c 'exit 0'`, "")
	require.NoError(t, err)
	require.Equal(t, "lease", s.Kind())
	require.Equal(t, `--exec 'sh -c '\''exit 0'\'''`, s.Ref())
	_, err = sim.NewExecSystem("no-such-program-here --x", "lease")
	require.ErrorContains(t, err, `cannot run "no-such-program-here"`)
	require.False(t, strings.Contains(err.Error(), "field"), "a command line has no fields: %v", err)
}

// The random nemesis draws nothing a process system cannot run: no stall (it holds calls inside a client
// the harness shares with in-process systems only), so the run goes ahead instead of being refused.
func TestNemesisLeavesOutWhatAProcessSystemCannotRun(t *testing.T) {
	t.Parallel()
	// A system file of its own, so the test does not need bin/tenure-instance built: the plan never
	// starts the command.
	dir := writeSystem(t, `{"name": "p", "kind": "lease", "command": ["sh"],
		"capabilities": {"beliefs": true, "fencing": true, "faketime": false}}`)
	ps, err := sim.LoadSystemFile(filepath.Join(dir, sim.SystemFileName))
	require.NoError(t, err)
	sc := sim.Scenario{Name: "n", Description: "n", Instances: 3, Endpoints: 3, Duration: 30 * time.Minute,
		Nemesis: &chaos.NemesisOptions{From: time.Minute, To: 29 * time.Minute, TTL: 30 * time.Second}}
	for seed := int64(1); seed <= 20; seed++ {
		steps, _, err := sim.Plan(sim.Options{System: ps, Scenario: sc, Seed: seed, TimeScale: 0.1})
		require.NoError(t, err)
		for _, st := range steps {
			require.NotEqual(t, "stall", st.Fault.Name(), "seed %d", seed)
		}
	}
}

// The composing nemesis too: no episode that stalls, and no single stall or clock change for a system
// whose runtime ignores libfaketime.
func TestExploreLeavesOutWhatAProcessSystemCannotRun(t *testing.T) {
	dir := writeSystem(t, `{"name": "p", "kind": "lease", "command": ["sh"],
		"capabilities": {"beliefs": true, "fencing": true, "faketime": false}}`)
	ps, err := sim.LoadSystemFile(filepath.Join(dir, sim.SystemFileName))
	require.NoError(t, err)
	sc := sim.Scenario{Name: "n", Description: "n", Instances: 4, Endpoints: 6, Duration: 30 * time.Minute,
		Explore: &chaos.ExploreOptions{From: time.Minute, To: 29 * time.Minute}}
	for seed := int64(1); seed <= 20; seed++ {
		steps, _, err := sim.Plan(sim.Options{System: ps, Scenario: sc, Seed: seed, TimeScale: 0.1})
		require.NoError(t, err)
		require.NotEmpty(t, steps)
		for _, st := range steps {
			require.NotContains(t, []string{"stall", "clock-drift"}, st.Fault.Name(), "seed %d", seed)
		}
	}
}

// A Node system whose packages are not installed is refused when its file is read, with the command
// that installs them: otherwise every instance dies on its first require, and the run says only that
// the instances exited.
func TestANodeSystemWithoutItsPackagesSaysHowToInstallThem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A stand-in for node: the check goes by the command's name, and the command must be runnable.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "node"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "system.json"),
		[]byte(`{"name": "n", "kind": "lease", "command": ["./node", "instance.js"]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"),
		[]byte(`{"dependencies": {"redlock": "4.2.0", "ioredis": "6.0.0"}}`), 0o644))
	_, err := sim.LoadSystemFile(filepath.Join(dir, "system.json"))
	require.ErrorContains(t, err, `needs its Node packages (ioredis, redlock), which are not installed (no node_modules): run "npm install" in `+dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(`{}`), 0o644))
	_, err = sim.LoadSystemFile(filepath.Join(dir, "system.json"))
	require.ErrorContains(t, err, `run "npm ci" in `+dir)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "node_modules"), 0o755))
	_, err = sim.LoadSystemFile(filepath.Join(dir, "system.json"))
	require.NoError(t, err)
}

// A system file says what its system promises; what it leaves out is promised, and a field the
// harness does not know is refused with the field named.
func TestSystemFilePromises(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(promises string) error {
		body := `{"name": "p", "kind": "lease", "command": ["sh", "-c", "true"]` + promises + `}`
		require.NoError(t, os.WriteFile(filepath.Join(dir, "system.json"), []byte(body), 0o644))
		_, err := sim.LoadSystemFile(dir)
		return err
	}
	load := func(promises string) []string {
		require.NoError(t, write(promises))
		p, err := sim.LoadSystemFile(dir)
		require.NoError(t, err)
		return p.Promises().NotPromised()
	}
	require.Empty(t, load(""), "nothing declared: everything promised")
	require.Equal(t, []string{"balance", "fencing"}, load(`, "promises": {"balance": false, "fencing": false, "failover": true}`))
	require.Equal(t, []string{"failover"}, load(`, "promises": {"failover": false}`))
	require.ErrorContains(t, write(`, "promises": {"balanse": false}`), `unknown field "promises.balanse"`)
	require.Empty(t, load(`, "promises": {"tick": "discovery"}`), "a tick is a declaration, not a promise withheld")
	require.ErrorContains(t, write(`, "promises": {"tick": "hourly"}`), `tick "hourly": want discovery or renewal`)
}

// A system file says how its library lays its keys out: a prefix it adds to every name it is given.
func TestSystemFileKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(keys string) error {
		body := `{"name": "k", "kind": "lease", "command": ["sh", "-c", "true"]` + keys + `}`
		require.NoError(t, os.WriteFile(filepath.Join(dir, "system.json"), []byte(body), 0o644))
		_, err := sim.LoadSystemFile(dir)
		return err
	}
	require.NoError(t, write(`, "keys": {"prefix": "mutex:"}`))
	require.ErrorContains(t, write(`, "keys": {"prefix": "a b"}`), `prefix "a b": a key prefix has no white space`)
	require.ErrorContains(t, write(`, "keys": {"pattern": "x"}`), `unknown field "keys.pattern"`)
}

// The composing nemesis draws wire pauses for a process system, whose check-then-act races live in its
// own code, and never for a system in this process (whose explored schedules stay what their seeds gave).
func TestExploreDrawsWirePausesForProcessSystems(t *testing.T) {
	ps, err := sim.LoadSystemFile(filepath.Join("..", "examples", "asyncio-election", sim.SystemFileName))
	require.NoError(t, err)
	sc, err := scenarios.Get("explore-election-redis")
	require.NoError(t, err)
	ref, err := sim.Lookup("election-redis")
	require.NoError(t, err)
	drawn := 0
	for seed := int64(1); seed <= 20; seed++ {
		s, _, err := sim.Plan(sim.Options{System: ps, Scenario: sc, Seed: seed, TimeScale: 1, Backend: "server"})
		require.NoError(t, err)
		for _, st := range s {
			if _, ok := st.Fault.(chaos.WirePause); ok {
				drawn++
			}
		}
		s, _, err = sim.Plan(sim.Options{System: ref, Scenario: sc, Seed: seed, TimeScale: 1, Backend: "server"})
		require.NoError(t, err)
		for _, st := range s {
			_, ok := st.Fault.(chaos.WirePause)
			require.False(t, ok, "seed %d: a wire pause drawn for the Redis election", seed)
		}
	}
	require.Greater(t, drawn, 5, "wire pauses drawn for the process system over 20 seeds")
}
