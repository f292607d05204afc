package reference_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/bubble"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

// TestVirtualCatalogue runs every scenario of the catalogue in virtual time for the system it is written
// for (the reference unless it names another): each is either refused, saying to run it in real time,
// or passes, and leaves no goroutine behind.
func TestVirtualCatalogue(t *testing.T) {
	bubble.ForTest(t)
	accepted := 0
	for _, sc := range scenarios.All() {
		var sys sim.System = reference.NewReference()
		if sc.System != "" {
			s, err := sim.Lookup(sc.System)
			if err != nil {
				t.Fatal(err)
			}
			sys = s
		}
		res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 1, Virtual: true})
		if errors.Is(err, sim.ErrVirtual) {
			if !strings.Contains(err.Error(), "drop --virtual") {
				t.Errorf("%s: refused without naming the real mode: %v", sc.Name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", sc.Name, err)
			continue
		}
		accepted++
		if len(res.CleanupErrors) > 0 || len(res.FaultErrors) > 0 {
			t.Errorf("%s: faults %v, clean-up %v", sc.Name, res.FaultErrors, res.CleanupErrors)
		}
		if !res.History.Meta.Virtual || res.History.Meta.Lag != nil {
			t.Errorf("%s: the history is not marked virtual (%v) or records a lag (%v)", sc.Name, res.History.Meta.Virtual, res.History.Meta.Lag)
		}
		rep := checker.Check(res.History, checker.DefaultOptions())
		if !rep.OK() {
			for _, r := range rep.Results {
				if r.Outcome == checker.Violated || r.Outcome == checker.Unknown {
					t.Errorf("%s (%s), seed 1, virtual: %s %s: %s", sc.Name, sys.Name(), r.Invariant, r.Outcome, r.Message)
				}
			}
		}
	}
	if accepted < 40 {
		t.Errorf("virtual time accepted %d scenarios of the catalogue, want every single-node one (at least 40)", accepted)
	}
}

// A run in virtual time keeps its events on the bubble's clock, which starts in the year 2000, and
// records when it really started: reports and JUnit files show the wall clock's date.
func TestVirtualRunRecordsTheWallClockStart(t *testing.T) {
	bubble.ForTest(t)
	sc, err := scenarios.Get("crash-failover")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	res, err := sim.Run(context.Background(), sim.Options{System: reference.NewReference(), Scenario: sc, Seed: 1, TimeScale: 1, Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.History.Meta.StartedAt; got.Before(before.Add(-time.Second)) || got.After(time.Now().Add(time.Second)) {
		t.Errorf("a virtual run's recorded start is %v, not the wall clock's (%v)", got, before)
	}
}
