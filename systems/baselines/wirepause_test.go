package baselines_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/bubble"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
	_ "github.com/tenurelabs/tenure/systems/reference"
)

// A pause at the wire takes hold where it is aimed: the getexpire baseline's leader, frozen just after
// its renewal's GET is answered, sends nothing until it wakes, and then sends the EXPIRE its stale GET
// decided on; it and the standby that took the role meanwhile lead at once. Without the pause the same
// scenario passes (the pause is what shows the race), and a system that never sends GET is never paused.
func TestWirePauseTakesHoldBetweenGetAndExpire(t *testing.T) {
	bubble.ForTest(t)
	sc, err := scenarios.Get("election-pause-after-get-redis")
	if err != nil {
		t.Fatal(err)
	}
	run := func(sys sim.System, sc sim.Scenario) (history.History, checker.Report) {
		t.Helper()
		res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 1, Virtual: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.FaultErrors) > 0 {
			t.Fatalf("%s: fault errors: %v", sys.Name(), res.FaultErrors)
		}
		return res.History, checker.Check(res.History, checker.DefaultOptions())
	}
	outcome := func(rep checker.Report, inv string) checker.Outcome {
		for _, r := range rep.Results {
			if r.Invariant == inv {
				return r.Outcome
			}
		}
		return ""
	}

	h, rep := run(baselines.GetExpire{}, sc)
	if got := outcome(rep, checker.InvSingleHolder); got != checker.Violated {
		t.Errorf("getexpire under a pause after its GET: single-holder %s, want violated", got)
	}
	var paused string
	var from, to history.Event
	for _, e := range h.Events {
		if e.Kind == history.KindLifecycle && e.Lifecycle.Change == history.LifePaused {
			paused, from = e.Instance, e
		}
		if e.Kind == history.KindLifecycle && e.Lifecycle.Change == history.LifeResumed && e.Instance == paused {
			to = e
		}
	}
	if paused == "" || to.At <= from.At {
		t.Fatalf("no pause took hold, or it never ended (paused %q at %v, resumed at %v)", paused, from.At, to.At)
	}
	var before, after *history.Event
	for i := range h.Events {
		e := &h.Events[i]
		if e.Kind != history.KindOp || e.Instance != paused {
			continue
		}
		switch {
		case e.At < from.At:
			before = e
		case e.At < to.At:
			t.Errorf("the paused instance called %q at %v, during its pause (%v..%v)", e.Op.Command, e.At, from.At, to.At)
		case after == nil:
			after = e
		}
	}
	// The GET's reply came before the pause, and its caller sees it on waking: in this process the
	// call returns then (a process system's recorder stamps the reply as it passed).
	if before == nil || !strings.HasPrefix(strings.ToUpper(before.Op.Command), "GET ") {
		t.Errorf("the pause did not follow a GET: the last call before it was %v", opText(before))
	}
	if after == nil || !strings.HasPrefix(strings.ToUpper(after.Op.Command), "EXPIRE ") {
		t.Errorf("on waking the leader did not send its EXPIRE first: %v", opText(after))
	}

	calm := sc
	calm.Steps = nil
	if h, rep := run(baselines.GetExpire{}, calm); !reports.Judge(rep, reports.ExpectOf(h.Meta)) {
		t.Errorf("getexpire without the pause failed %s: the scenario should show the race only under the pause", failed(rep))
	}

	election, err := sim.Lookup("election-redis")
	if err != nil {
		t.Fatal(err)
	}
	h, rep = run(election, sc)
	if !reports.Judge(rep, reports.ExpectOf(h.Meta)) {
		t.Errorf("the Redis election failed %s", failed(rep))
	}
	for _, e := range h.Events {
		if e.Kind == history.KindLifecycle && e.Lifecycle.Change == history.LifePaused {
			t.Errorf("the Redis election renews by script and sends no GET, yet %s was paused at %v", e.Instance, e.At)
		}
	}
}

func failed(rep checker.Report) string {
	var out []string
	for _, r := range rep.Results {
		if r.Outcome == checker.Violated || r.Outcome == checker.Unknown {
			out = append(out, r.Invariant+": "+r.Message)
		}
	}
	return strings.Join(out, "; ")
}

func opText(e *history.Event) string {
	if e == nil || e.Op == nil {
		return "none"
	}
	return e.Op.Command + " at " + e.At.String()
}
