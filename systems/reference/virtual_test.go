package reference_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/bubble"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

func TestVirtualProbe(t *testing.T) {
	bubble.ForTest(t)
	for _, sc := range scenarios.All() {
		if testing.Short() && sc.Name != "slow-replies" && sc.Name != "explore-election-redis" && sc.Name != "election-late-acquire-redis" {
			continue
		}
		var sys sim.System = reference.NewReference()
		if sc.System != "" {
			s, err := sim.Lookup(sc.System)
			if err != nil {
				t.Logf("%s: %v", sc.Name, err)
				continue
			}
			sys = s
		}
		start := time.Now()
		res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 1, Virtual: true})
		if errors.Is(err, chaos.ErrUnsupported) {
			t.Logf("%-40s refused: %v", sc.Name, err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", sc.Name, err)
			continue
		}
		rep := checker.Check(res.History, checker.Options{})
		t.Logf("%-40s wall %8s events %6d dur %6s ok=%v faultErrs=%v cleanup=%v", sc.Name, time.Since(start).Round(time.Millisecond), len(res.History.Events), res.History.Meta.Duration, rep.OK(), res.FaultErrors, res.CleanupErrors)
		if !rep.OK() {
			for _, r := range rep.Results {
				if r.Outcome != checker.Pass && r.Outcome != checker.Skipped && r.Outcome != checker.Caught {
					t.Logf("    %s %s: %.300s", r.Invariant, r.Outcome, r.Message)
				}
			}
		}
	}
}
