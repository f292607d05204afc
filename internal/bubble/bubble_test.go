package bubble

import (
	"sync"
	"testing"
	"time"
)

// TestMutexWaitIsIdle holds a mutex across a sleep while another goroutine waits for it: without
// mutex waits counted idle the bubble's clock never moves and the test hangs.
func TestMutexWaitIsIdle(t *testing.T) {
	if err := MutexWaitsIdle(); err != nil {
		t.Fatal(err)
	}
	ForTest(t)
	err := Run(func() {
		var mu sync.Mutex
		mu.Lock()
		done := make(chan struct{})
		go func() {
			mu.Lock()
			mu.Unlock()
			close(done)
		}()
		time.Sleep(time.Millisecond) // the waiter is parked on the mutex
		time.Sleep(time.Hour)
		mu.Unlock()
		<-done
	})
	if err != nil {
		t.Fatal(err)
	}
}
