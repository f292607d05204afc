package virtualcheck_test

import (
	"context"
	"sync"
	"testing"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/bubble"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	_ "github.com/tenurelabs/tenure/systems/baselines"
	_ "github.com/tenurelabs/tenure/systems/peers"
	_ "github.com/tenurelabs/tenure/systems/reference"
)

// cells are the scenario × system pairs judged both ways: the reference on scenarios with a crash, a
// data loss and held replies (it passes), and each baseline and peer on Redis on the cell its known flaw
// shows in (simrun matrix's characteristic cell: it fails on every seed).
var cells = []struct{ system, scenario string }{
	{"reference", "crash-failover"},
	{"reference", "redis-restart-empty"},
	{"reference", "slow-replies"},
	{"naive", "redis-partition"},
	{"spec-naive", "gc-pause"},
	{"getexpire", "election-renewal-gap-redis"},
	{"heartbeat-takeover", "election-leader-partition-redis"},
	{"redislock", "redis-restart-empty"},
	{"redsync", "redis-restart-empty"},
	{"redsync-setnx-extend", "redis-restart-empty"},
}

// verdict runs one cell at the ci suite's time scale and judges it: passed, and the invariants that
// failed.
func verdict(t *testing.T, system, scenario string, virtual bool) (bool, bool, []string) {
	sys, err := sim.Lookup(system)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Get(scenario)
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 0.1, Virtual: virtual, Backend: "server"}
	if virtual {
		o.Backend = ""
	}
	res, err := sim.Run(context.Background(), o)
	if err != nil {
		t.Errorf("%s %s (virtual %v): %v", system, scenario, virtual, err)
		return false, false, nil
	}
	rep := checker.Check(res.History, checker.DefaultOptions())
	passed := reports.Judge(rep, reports.ExpectOf(res.History.Meta))
	var bad []string
	for _, r := range rep.Results {
		if r.Outcome == checker.Violated || r.Outcome == checker.Unknown {
			bad = append(bad, r.Invariant)
		}
	}
	return passed, reports.Inconclusive(rep, reports.ExpectOf(res.History.Meta)), bad
}

// TestVirtualAndRealVerdictsAgree runs every cell in real time (a private redis-server each, two at a
// time) and in virtual time, and requires the same verdict. A real run the harness's own lag left
// inconclusive is run again once.
func TestVirtualAndRealVerdictsAgree(t *testing.T) {
	if _, ok := redisserver.Available(); !ok {
		if redistest.Required() {
			t.Fatal("redis-server is not installed, and TENURE_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server is not installed")
	}
	if testing.Short() {
		t.Skip("real runs of ten scenarios: not in -short")
	}
	type outcome struct {
		passed bool
		bad    []string
	}
	real := make([]outcome, len(cells))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, c := range cells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for try := 0; try < 2; try++ {
				p, inconclusive, bad := verdict(t, c.system, c.scenario, false)
				real[i] = outcome{p, bad}
				if !inconclusive {
					break
				}
			}
		}()
	}
	wg.Wait()
	bubble.ForTest(t)
	for i, c := range cells {
		p, _, bad := verdict(t, c.system, c.scenario, true)
		if p != real[i].passed {
			t.Errorf("%s on %s, seed 1: virtual passed=%v %v, real passed=%v %v", c.system, c.scenario, p, bad, real[i].passed, real[i].bad)
		}
		if c.system == "reference" && !p {
			t.Errorf("the reference failed %s in virtual time: %v", c.scenario, bad)
		}
		if c.system != "reference" && p {
			t.Errorf("%s passed its characteristic cell %s in virtual time", c.system, c.scenario)
		}
	}
}
