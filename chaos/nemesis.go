package chaos

import (
	"fmt"
	"math/rand"
	"time"
)

// NemesisOptions shape a random schedule. All times are spec times.
type NemesisOptions struct {
	// From and To bound when faults may start; every fault ends before To.
	From, To time.Duration
	// Instances is the fleet size at From.
	Instances int
	// Kinds are the fault names to draw from; empty means all that the backend supports (see
	// NemesisKinds).
	Kinds []string
	// TTL is the lease TTL: fault durations are drawn around it, and the gap after each fault is long
	// enough for the fleet to recover (one TTL plus one third).
	TTL time.Duration
	_   struct{}
}

// NemesisKinds lists the fault names a nemesis can draw. The backend-process faults need a backend the
// harness owns (a private redis-server).
var NemesisKinds = []string{"crash", "restart", "partition", "one-way-partition", "latency", "pause", "clock-drift", "outage", "redis-restart", "redis-pause", "stop", "start", "stall"}

// Nemesis draws a random schedule from rng. The same rng state yields the same schedule. The fleet is
// kept between 2 and Instances+2 members: a crash or stop is followed, after recovery, by a start.
func Nemesis(rng *rand.Rand, o NemesisOptions) (Schedule, error) {
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = NemesisKinds
	}
	for _, k := range kinds {
		if !knownKind(k) {
			return nil, fmt.Errorf("chaos: unknown nemesis fault %q (known: %v)", k, NemesisKinds)
		}
	}
	if o.TTL <= 0 || o.To <= o.From || o.Instances < 1 {
		return nil, fmt.Errorf("chaos: nemesis needs TTL > 0, To > From and at least one instance")
	}
	settle := o.TTL + o.TTL/3
	live := o.Instances
	var s Schedule
	at := o.From
	for {
		kind := kinds[rng.Intn(len(kinds))]
		dur := o.TTL/3 + time.Duration(rng.Int63n(int64(o.TTL)))
		slot := rng.Intn(live)
		var st Step
		switch kind {
		case "crash", "stop", "restart":
			if live <= 2 && kind != "restart" {
				kind = "start"
			}
		case "start":
			if live >= o.Instances+2 {
				kind = "crash"
			}
		}
		switch kind {
		case "crash":
			st = Step{At: at, Fault: Crash{Slot: slot}}
			live--
		case "stop":
			st = Step{At: at, Fault: Stop{Slot: slot}}
			live--
		case "start":
			st = Step{At: at, Fault: Start{Count: 1}}
			live++
		case "restart":
			st = Step{At: at, Fault: Restart{Slot: slot}}
		case "partition":
			st = Step{At: at, For: dur, Fault: Partition{Slot: slot}}
		case "one-way-partition":
			st = Step{At: at, For: dur, Fault: Partition{Slot: slot, OneWay: true}}
		case "latency":
			lat := o.TTL / 30 * time.Duration(1+rng.Intn(3))
			st = Step{At: at, For: dur, Fault: Latency{Slot: slot, Latency: lat, Jitter: lat / 2}}
		case "pause":
			st = Step{At: at, For: o.TTL + o.TTL/2, Fault: Pause{Slot: slot}}
		case "clock-drift":
			rates := []float64{0.995, 1.005, 1.01}
			st = Step{At: at, For: dur, Fault: Drift{Slot: slot, Rate: rates[rng.Intn(len(rates))]}}
		case "outage":
			st = Step{At: at, For: dur, Fault: Outage{}}
		case "redis-restart":
			st = Step{At: at, For: o.TTL / 10, Fault: RedisRestart{}}
		case "redis-pause":
			st = Step{At: at, For: dur, Fault: RedisPause{}}
		case "stall":
			st = Step{At: at, For: dur, Fault: Stall{Slot: slot}}
		}
		end := st.At + st.For
		if end+settle > o.To {
			break
		}
		s = append(s, st)
		at = end + settle + time.Duration(rng.Int63n(int64(o.TTL/3)+1))
	}
	return s, nil
}

func knownKind(k string) bool {
	for _, n := range NemesisKinds {
		if n == k {
			return true
		}
	}
	return false
}
