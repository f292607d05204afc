//go:build tenure_mutants

package sim_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/lagtest"
	"github.com/tenurelabs/tenure/internal/mutation"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	_ "github.com/tenurelabs/tenure/systems/reference" // registers the reference and its mutants
)

// A safety mechanism that no scenario can defeat is untested. Each mutant of the catalogue
// (mutation.Mutants) is the reference with one mechanism removed; it must be caught within three seeds
// by one of the invariants its entry names, in one of the scenarios built to expose it, while the
// unmodified reference passes every one of the same runs. Mutants that no fault can expose, because
// another mechanism always covers them, say why in the catalogue instead (Uncaught).
//
// This file is built only with the tenure_mutants tag (docs/mutants.md).

// mutantCases are the catalogue's mutants that a scenario catches.
func mutantCases() []mutation.Mutant {
	var out []mutation.Mutant
	for _, mu := range mutation.Mutants {
		if len(mu.Scenarios) > 0 {
			out = append(out, mu)
		}
	}
	return out
}

// The catalogue names real scenarios and invariants, and every mutant is either caught or says why it
// cannot be.
func TestMutantCatalogue(t *testing.T) {
	invariants := []string{checker.InvAssumptions, checker.InvSingleHolder, checker.InvStaleBelief, checker.InvSinglePoller,
		checker.InvStalePoll, checker.InvValidity, checker.InvLinearizable, checker.InvFailover,
		checker.InvBalance, checker.InvFencing, checker.InvLiveness, checker.InvBlindWrite}
	seen := map[mutation.Name]bool{}
	for _, mu := range mutation.Mutants {
		if seen[mu.Name] {
			t.Errorf("mutant %s is listed twice", mu.Name)
		}
		seen[mu.Name] = true
		if _, err := sim.Lookup(mu.System()); err != nil {
			t.Errorf("mutant %s: %v", mu.Name, err)
		}
		if (len(mu.Scenarios) == 0) == (mu.Uncaught == "") {
			t.Errorf("mutant %s needs scenarios that catch it, or Uncaught saying why none can", mu.Name)
		}
		if len(mu.Scenarios) > 0 && len(mu.CaughtBy) == 0 {
			t.Errorf("mutant %s: no invariant to catch it", mu.Name)
		}
		for _, sc := range mu.Scenarios {
			if _, err := scenarios.Get(sc); err != nil {
				t.Errorf("mutant %s: %v", mu.Name, err)
			}
		}
		for _, inv := range mu.CaughtBy {
			if !slices.Contains(invariants, inv) {
				t.Errorf("mutant %s: no invariant %q (known: %v)", mu.Name, inv, invariants)
			}
		}
	}
}

// mutantSeeds are the seeds each mutant gets, in order until caught: caught on any of them counts.
// Most are caught on the first. no-watchdog is caught on about half the seeds of stall-long-polls
// (a poll must be in flight, with more than the safety margin to go, when the deadline passes):
// eight seeds leave a miss about one chance in 250.
var mutantSeeds = []int64{1, 2, 3, 4, 5, 6, 7, 8}

// mutantParallel is how many runs go on at once (TENURE_MUTANT_PARALLEL overrides it). A run spends
// nearly all its time waiting on timers and loopback round trips (the whole test uses a few CPU
// seconds a minute), so four fit on two cores with the failover and handoff margins intact: four
// crash-failover runs at once on a loaded machine took over within 2 ms of the lease's expiry, as one
// alone does. The test logs, for every reference run, its tightest takeover against its bound.
const mutantParallel = 4

// runVerdict runs one scenario once and reports the invariants it violated (or a setup error).
type runVerdict struct {
	violated []string
	// inconclusive lists the timing invariants the run could not judge (the harness ran late): such a
	// run is neither a pass, for the reference, nor a catch, for a mutant.
	inconclusive []string
	err          error
	summary      string
	// saved is where a reference's run's history was written when it did not pass (a directory of its
	// own, kept after the test: `simrun report DIR` renders it), for its failure to be read.
	saved string
	// slack is the smallest room any measured takeover left below its bound, and slackAt says which;
	// the test logs it for the reference, to show that running cases side by side leaves the timing
	// bounds their margin.
	slack   time.Duration
	slackAt string
	wall    time.Duration
}

type verdictCache struct {
	mu   sync.Mutex
	runs map[string]*runOnce
	sem  chan struct{}
}

type runOnce struct {
	once sync.Once
	v    runVerdict
}

func (c *verdictCache) get(system, scenario string, seed int64) runVerdict {
	key := fmt.Sprintf("%s/%s/%d", system, scenario, seed)
	c.mu.Lock()
	r, ok := c.runs[key]
	if !ok {
		r = &runOnce{}
		c.runs[key] = r
	}
	c.mu.Unlock()
	r.once.Do(func() {
		c.sem <- struct{}{}
		defer func() { <-c.sem }()
		r.v = runScenario(system, scenario, seed)
	})
	return r.v
}

func runScenario(system, scenario string, seed int64) runVerdict {
	sys, err := sim.Lookup(system)
	if err != nil {
		return runVerdict{err: err}
	}
	sc, err := scenarios.Get(scenario)
	if err != nil {
		return runVerdict{err: err}
	}
	start := time.Now()
	res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: seed, TimeScale: 0.1, Backend: "server"})
	if err != nil {
		return runVerdict{err: err}
	}
	rep := checker.Check(res.History, checker.DefaultOptions())
	v := runVerdict{slack: -1, wall: time.Since(start)}
	for _, fo := range rep.Failovers {
		if fo.Latency >= 0 && (v.slack < 0 || fo.Bound-fo.Latency < v.slack) {
			v.slack = fo.Bound - fo.Latency
			v.slackAt = fmt.Sprintf("%s %s took %v of %v", fo.Fault, fo.Endpoint, fo.Latency.Round(time.Millisecond), fo.Bound)
		}
	}
	var lines []string
	for _, r := range rep.Results {
		if r.Outcome == checker.Violated || r.Outcome == checker.Unknown {
			v.violated = append(v.violated, r.Invariant)
			lines = append(lines, fmt.Sprintf("%s %s: %s", r.Invariant, r.Outcome, r.Message))
		}
		if r.Outcome == checker.Inconclusive {
			v.inconclusive = append(v.inconclusive, r.Invariant)
			lines = append(lines, fmt.Sprintf("%s %s: %s", r.Invariant, r.Outcome, r.Message))
		}
	}
	v.summary = strings.Join(lines, "; ")
	if len(lines) > 0 && !strings.HasPrefix(system, "mutant-") {
		if dir, err := os.MkdirTemp("", "tenure-mutants-"+system+"-"+scenario+"-*"); err == nil {
			if history.WriteFile(filepath.Join(dir, "history.jsonl"), res.History) == nil {
				v.saved = dir
			}
		}
	}
	return v
}

func TestMutantsAreCaught(t *testing.T) {
	cases := mutantCases()
	if len(cases) == 0 {
		t.Fatal("no mutant cases")
	}
	if testing.Short() {
		t.Skip("runs dozens of scenarios; skipped with -short")
	}
	redistest.Start(t) // fails in CI, skips locally, when redis-server is missing
	parallel := mutantParallel
	if os.Getenv("TENURE_MUTANT_PARALLEL") != "" {
		_, _ = fmt.Sscan(os.Getenv("TENURE_MUTANT_PARALLEL"), &parallel)
	}
	cache := &verdictCache{runs: map[string]*runOnce{}, sem: make(chan struct{}, parallel)}
	// Every mutant is expected to be caught on the first seed: its run and the reference's are queued
	// at once, the longest scenarios first, so that the runs at hand never wait on how many subtests
	// go test lets run in parallel, and the last to finish is a short one. A later seed is run only
	// when a subtest asks for it.
	type job struct {
		system, scenario string
		length           time.Duration
	}
	var jobs []job
	for _, tc := range cases {
		sc, err := scenarios.Get(tc.Scenarios[0])
		if err != nil {
			t.Fatalf("mutant %s: %v", tc.Name, err)
		}
		jobs = append(jobs, job{tc.System(), sc.Name, sc.Duration}, job{tc.Of, sc.Name, sc.Duration})
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(b.length, a.length) })
	// A -run pattern that picks subtests runs only what they ask for.
	if f := flag.Lookup("test.run"); f == nil || !strings.Contains(f.Value.String(), "/") {
		for _, j := range jobs {
			go cache.get(j.system, j.scenario, mutantSeeds[0])
		}
	}
	for _, tc := range cases {
		t.Run(string(tc.Name), func(t *testing.T) {
			t.Parallel()
			system, refName := tc.System(), tc.Of
			var tried, unjudged, refUnjudged []string
			caught := false
		seeds:
			for _, seed := range mutantSeeds {
				for _, sc := range tc.Scenarios {
					// The reference and the mutant run side by side; the reference's run is shared with
					// every other mutant judged on the same scenario and seed.
					refDone := make(chan runVerdict, 1)
					go func() { refDone <- cache.get(refName, sc, seed) }()
					v := cache.get(system, sc, seed)
					ref := <-refDone
					if ref.err != nil || len(ref.violated) > 0 {
						t.Errorf("the reference fails %s seed %d, which its mutant %s is judged on: %v %s (history: %s)", sc, seed, tc.Name, ref.err, ref.summary, ref.saved)
					} else if len(ref.inconclusive) > 0 {
						// The reference's run is the baseline the mutant is set against: unjudged, it
						// proves nothing either way, and is never counted as a pass.
						refUnjudged = append(refUnjudged, fmt.Sprintf("the reference's %s seed %d: %s", sc, seed, ref.summary))
					} else if ref.slack >= 0 {
						t.Logf("reference %s seed %d (%v): tightest takeover %s", sc, seed, ref.wall.Round(time.Second), ref.slackAt)
					}
					if v.err != nil {
						t.Fatalf("%s in %s seed %d: %v", system, sc, seed, v.err)
					}
					tried = append(tried, fmt.Sprintf("%s seed %d: violated %v, inconclusive %v", sc, seed, v.violated, v.inconclusive))
					for _, inv := range v.inconclusive {
						if slices.Contains(tc.CaughtBy, inv) {
							unjudged = append(unjudged, fmt.Sprintf("the mutant's %s seed %d: %s", sc, seed, v.summary))
						}
					}
					for _, inv := range v.violated {
						if slices.Contains(tc.CaughtBy, inv) && strings.Contains(v.summary, tc.Mention) {
							caught = true
							t.Logf("caught in %s seed %d by %s (%s)", sc, seed, inv, v.summary)
							break seeds
						}
					}
				}
			}
			switch {
			case !caught && len(unjudged)+len(refUnjudged) > 0:
				// An inconclusive run is never a catch and never a miss: the test is inconclusive, and
				// make mutants runs it once more (internal/unitrerun).
				lagtest.Inconclusive(t, "mutant %s was not caught by %v within seeds %v, but runs it rests on could not be judged: %s",
					tc.Name, tc.CaughtBy, mutantSeeds, strings.Join(append(refUnjudged, unjudged...), "; "))
			case !caught:
				t.Errorf("mutant %s was not caught by %v within seeds %v:\n  %s", tc.Name, tc.CaughtBy, mutantSeeds, strings.Join(tried, "\n  "))
			case len(refUnjudged) > 0:
				lagtest.Inconclusive(t, "mutant %s was caught, but the reference's runs it is set against could not be judged: %s",
					tc.Name, strings.Join(refUnjudged, "; "))
			}
		})
	}
}
