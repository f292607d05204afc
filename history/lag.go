package history

import "time"

// Lag is what the harness measured of its own lateness through a run (sim's lag monitor). In-process
// systems share the Go runtime with the harness, and the backend shares the machine: on an
// oversubscribed machine every goroutine — a system's takeover timer, the endpoint service that stamps
// a poll — and the redis-server itself run late, and a timing verdict can fail for a reason that is not
// the system's. Three signals are measured, each as the worst value seen in a window of run time:
//
//   - Canary: how late a timer the harness arms every few milliseconds woke (a hand-off from a timer to
//     a goroutine, as a system's own timers make);
//   - Sched: the longest a goroutine of this process waited, runnable, before it ran (the Go runtime's
//     /sched/latencies:seconds histogram, read once a window; the lower edge of the highest bucket that
//     grew, so never more than what was measured);
//   - Ping: the round trip of a PING the harness sends the backend on its own connection (never an
//     instance's link) once a window: a redis-server starved of CPU answers late (a single server
//     only: a backend of several answers from whichever node its client picks, perhaps one a fault
//     killed, and is not pinged). Pings overlapping a
//     backend fault measure the fault, not the machine; the checker and the report leave those out
//     (the summaries, written without knowledge of the faults, include them).
//
// Samples are kept only for windows in which some signal reached Floor, so an ordinary run's history
// grows by little; the summaries cover every window. Nil in histories of schema 1.
type Lag struct {
	// Window is the length of the window each sample covers (100 ms).
	Window time.Duration `json:"window"`
	// Floor is the least lag a window needs, in some signal, to be kept in Samples.
	Floor time.Duration `json:"floor"`
	// Windows is how many windows were measured.
	Windows int `json:"windows"`
	// Canary, Sched and Ping summarise each signal over every window.
	Canary LagSummary `json:"canary"`
	Sched  LagSummary `json:"sched"`
	Ping   LagSummary `json:"ping"`
	// CPUs is how many CPUs the machine had; System sums, over every window, the CPU time the system
	// under test's own processes used (process systems only: an in-process system shares the
	// harness's process, and is not measured apart). Zero in older histories and for in-process systems.
	CPUs   int           `json:"cpus,omitempty"`
	System time.Duration `json:"system,omitempty"`
	// Samples are the windows in which some signal reached Floor (or the system used a whole CPU), in
	// time order.
	Samples []LagSample `json:"samples,omitempty"`
}

// LagSummary is one signal over a run: the worst value, and the 99th percentile of the windows' worst
// values (nearest rank).
type LagSummary struct {
	Max time.Duration `json:"max"`
	P99 time.Duration `json:"p99"`
}

// LagSample is the worst of each signal in the window [At, At+Lag.Window). A value is attributed to
// the window in which it was observed, which is when the lateness ended: the lateness itself covered
// [observed-value, observed]. Zero fields saw nothing worth keeping.
type LagSample struct {
	At     time.Duration `json:"at"`
	Canary time.Duration `json:"canary,omitempty"`
	Sched  time.Duration `json:"sched,omitempty"`
	Ping   time.Duration `json:"ping,omitempty"`
	// System is the CPU time the system under test's own processes used in the window (process
	// systems only): with Lag.CPUs, whether the system itself may have starved the harness. A window is
	// kept when some other signal reached Lag.Floor, or when this one reached the window's length (a
	// whole CPU's worth: lateness observed later may have covered it).
	System time.Duration `json:"system,omitempty"`
}

// Harness is the larger of the sample's two in-process signals (canary and scheduler): how late this
// process ran in the window.
func (s LagSample) Harness() time.Duration { return max(s.Canary, s.Sched) }
