package election

import (
	"fmt"
	"time"
)

// State is where an elector stands in the election for its role.
type State int32

const (
	// Follower: not leading, and another instance is known to lead.
	Follower State = iota
	// Candidate: not leading, and no other leader is known; the elector is contending.
	Candidate
	// Leader: this elector holds the role and its local deadline has not passed.
	Leader
)

// String returns "follower", "candidate" or "leader".
func (s State) String() string {
	switch s {
	case Follower:
		return "follower"
	case Candidate:
		return "candidate"
	case Leader:
		return "leader"
	}
	return fmt.Sprintf("state(%d)", int32(s))
}

// EventType says what an Event reports.
type EventType int

const (
	// StateChanged: the elector moved from Event.Prev to Event.State.
	StateChanged EventType = iota + 1
	// Acquired: this elector became leader with Event.Term.
	Acquired
	// Lost: the leadership with Event.Term ended; Event.Err says why (ErrStopped for a graceful stop,
	// ErrCrashed for a cancelled Start context, otherwise an involuntary loss wrapping ErrLeadershipLost).
	Lost
	// ElectionFailed: an acquisition attempt failed with Event.Err (the backend could not be asked; this
	// is not the same as another instance holding the role).
	ElectionFailed
)

// String returns the event type's name.
func (t EventType) String() string {
	switch t {
	case StateChanged:
		return "state-changed"
	case Acquired:
		return "acquired"
	case Lost:
		return "lost"
	case ElectionFailed:
		return "election-failed"
	}
	return fmt.Sprintf("event(%d)", int(t))
}

// Event is one thing that happened to an elector, stamped on its clock.
type Event struct {
	Type  EventType
	Role  string
	Time  time.Time
	State State  // the state after the event
	Prev  State  // the state before (StateChanged only)
	Term  uint64 // Acquired, Lost
	Err   error  // Lost, ElectionFailed

	_ struct{}
}

// String describes the event in one line: its time (UTC, milliseconds, without Go's monotonic clock
// reading), role, type, and the fields that type carries. For example
// "2026-11-26T08:00:01.250Z nightly-cleanup acquired term 7 (leader)" or
// "2026-11-26T08:00:04.000Z nightly-cleanup state-changed candidate → follower".
func (e Event) String() string {
	s := e.Time.Round(0).UTC().Format("2006-01-02T15:04:05.000Z07:00") + " " + e.Role + " " + e.Type.String()
	switch e.Type {
	case StateChanged:
		s += " " + e.Prev.String() + " → " + e.State.String()
	case Acquired, Lost:
		s += fmt.Sprintf(" term %d (%s)", e.Term, e.State)
	default:
		s += " (" + e.State.String() + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}
