package history_test

import (
	"testing"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// TestStrictRecorderNeverReadsTheSameInstantTwice: a clock that stands still (virtual time between two
// timers) still orders the readings taken of it, a nanosecond apart.
func TestStrictRecorderNeverReadsTheSameInstantTwice(t *testing.T) {
	start := time.Now().Add(time.Hour) // in the future: time.Since is negative and constant-ish
	r := history.NewStrictRecorderFrom(start)
	prev := r.Now()
	for i := 0; i < 1000; i++ {
		now := r.Now()
		if now <= prev {
			t.Fatalf("reading %d: %v after %v", i, now, prev)
		}
		if now-prev > time.Millisecond {
			t.Fatalf("reading %d jumped %v", i, now-prev)
		}
		prev = now
	}
}
