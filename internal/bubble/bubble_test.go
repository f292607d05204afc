package bubble

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdAcrossSleep holds a mutex across a sleep while another goroutine waits for it.
func holdAcrossSleep() {
	var mu sync.Mutex
	mu.Lock()
	done := make(chan struct{})
	go func() {
		mu.Lock()
		mu.Unlock()
		close(done)
	}()
	time.Sleep(time.Millisecond) // the waiter is parked on the mutex now
	time.Sleep(time.Hour)
	mu.Unlock()
	<-done
}

// runWithin runs f in a bubble and reports whether it ended within d of real time.
func runWithin(t *testing.T, d time.Duration, f func()) (error, bool) {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- Run(f) }()
	select {
	case err := <-res:
		return err, true
	case <-time.After(d):
		return nil, false
	}
}

// TestAMutexWaitLetsTheClockMove: without the mutex wait reasons marked idle, a goroutine waiting on a
// mutex that another holds across a sleep keeps the bubble's clock still for good. That case runs in a
// child process (a stuck bubble cannot be ended), whose bubble must not end: the child is still stuck
// after two seconds, or the runtime ends it as deadlocked (nothing else runs in it).
func TestAMutexWaitLetsTheClockMove(t *testing.T) {
	if os.Getenv("BUBBLE_HELPER") == "busy" {
		ForTest(t)
		if err := setMutexWaitsIdle(false); err != nil {
			t.Fatal(err)
		}
		_ = Run(holdAcrossSleep)
		fmt.Println("ENDED")
		return
	}
	if err := MutexWaitsIdle(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAMutexWaitLetsTheClockMove$", "-test.v")
	cmd.Env = append(os.Environ(), "BUBBLE_HELPER=busy")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	if strings.Contains(out.String(), "ENDED") {
		t.Fatalf("with mutex waits busy the bubble ended: the premise of MutexWaitsIdle is gone:\n%s", out.String())
	}
	ForTest(t)
	if err, ended := runWithin(t, 30*time.Second, holdAcrossSleep); !ended || err != nil {
		t.Fatalf("with mutex waits idle: ended %v, err %v", ended, err)
	}
}

func TestADeadlockIsAnErrorNamingWhereItWaits(t *testing.T) {
	ForTest(t)
	err := Run(func() {
		ch := make(chan int)
		go func() { <-ch }() // never sent to
	})
	if !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "TestADeadlockIsAnErrorNamingWhereItWaits") {
		t.Fatalf("Run = %v, want ErrStuck naming the blocked goroutine", err)
	}
}

func TestAPanicIsAnError(t *testing.T) {
	ForTest(t)
	err := Run(func() { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Run = %v, want the panic", err)
	}
}

func TestTheClockJumps(t *testing.T) {
	ForTest(t)
	var slept time.Duration
	if err := Run(func() {
		t0 := time.Now()
		time.Sleep(24 * time.Hour)
		slept = time.Since(t0)
	}); err != nil {
		t.Fatal(err)
	}
	if slept != 24*time.Hour {
		t.Fatalf("slept %s of the bubble's clock, want exactly 24h", slept)
	}
}
