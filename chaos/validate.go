package chaos

import (
	"fmt"
	"sort"
)

// Validate checks a schedule against the fleet and sessions it will meet, before anything runs: every
// slot must name an instance that is live at that step (counting the crashes, stops and starts before
// it), every endpoint a fault targets the holder of must exist, and every session change must name a
// session that exists (or, for "add", does not).
func Validate(s Schedule, instances int, sessions []string) error {
	steps := append(Schedule(nil), s...)
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At < steps[j].At })
	have := map[string]bool{}
	for _, id := range sessions {
		have[id] = true
	}
	live := instances
	slot := func(st Step, n int, of string) error {
		if of != "" {
			if !have[of] {
				return fmt.Errorf("chaos: step %q targets the holder of %s, which is not a session then", st, of)
			}
			return nil
		}
		if n < 0 || n >= live {
			return fmt.Errorf("chaos: step %q targets slot %d, but only %d instances are live then (slots 0..%d)", st, n, live, live-1)
		}
		return nil
	}
	for _, st := range steps {
		var err error
		switch f := st.Fault.(type) {
		case Crash:
			err = slot(st, f.Slot, f.Of)
			live--
		case Stop:
			err = slot(st, f.Slot, f.Of)
			live--
		case Restart:
			err = slot(st, f.Slot, "")
		case Partition:
			err = slot(st, f.Slot, f.Of)
		case Pause:
			err = slot(st, f.Slot, f.Of)
		case Stall:
			err = slot(st, f.Slot, f.Of)
		case WirePause:
			if err = f.Validate(); err == nil {
				err = slot(st, f.Slot, f.Of)
			}
		case ConnReset:
			err = slot(st, f.Slot, f.Of)
		case SlowRequests:
			err = slot(st, f.Slot, f.Of)
		case SlowReplies:
			err = slot(st, f.Slot, f.Of)
		case Drift:
			err = slot(st, f.Slot, "")
		case Latency:
			if f.Slot >= 0 {
				err = slot(st, f.Slot, "")
			}
		case Start:
			live += max(f.Count, 1)
		case SessionChange:
			switch {
			case f.Change == "add" && have[f.ID]:
				err = fmt.Errorf("chaos: step %q adds session %s, which already exists", st, f.ID)
			case f.Change != "add" && !have[f.ID]:
				err = fmt.Errorf("chaos: step %q names session %s, which does not exist then", st, f.ID)
			}
			have[f.ID] = f.Change != "remove"
		}
		if err != nil {
			return err
		}
		if live < 0 {
			return fmt.Errorf("chaos: step %q leaves fewer than zero instances", st)
		}
	}
	return nil
}
