package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// Instance processes are started from one goroutine locked to its OS thread for the life of the
// program. Pdeathsig (the child is killed when its parent dies, even by SIGKILL) fires when the thread
// that forked the child exits, not when the process does: a child forked from an arbitrary goroutine's
// thread would be killed if the runtime ever ended that thread, and a locked goroutine that returns
// ends its thread. This one never returns, so its thread lives exactly as long as the harness.
//
// The same thread gives the instances their lower CPU priority (instanceNice). On Linux a nice value
// belongs to a thread, and a forked child starts with its forking thread's: the spawner's thread lowers
// its own priority once, and every process it forks is born at it, before it runs an instruction, as are
// the threads and children it makes after. Renicing the group after the start (setpriority PRIO_PGRP)
// would leave the instance at the harness's priority until then, and miss a child forked in that
// instant (it copies its parent's value before it joins the group's list); it is only the fallback. The
// rest of the harness keeps its priority: the runtime never clones its threads from a locked thread
// (it asks its template thread to), and nothing but spawning runs on this one.
type spawnRequest struct {
	cmd  *exec.Cmd
	done chan spawnResult
}

type spawnResult struct {
	err  error
	nice error // the process runs at the harness's priority, and why
}

// instanceNice is how many steps of nice below the harness's own priority instances run (10: nice 10
// for a harness at 0). The harness must not lose CPU to the system it measures, or the system could
// buy, with its own load, the lag that excuses its lateness (see lag.go); an instance still gets the
// CPU the harness leaves idle.
const instanceNice = 10

var (
	spawnOnce  sync.Once
	spawnQueue chan spawnRequest
)

func spawner(queue <-chan spawnRequest) {
	runtime.LockOSThread() // never unlocked: see above
	target, lowered := lowerThreadPriority()
	for req := range queue {
		res := spawnResult{err: req.cmd.Start()}
		if res.err == nil && lowered != nil {
			res.nice = lowered
			if target >= 0 {
				if err := syscall.Setpriority(syscall.PRIO_PGRP, req.cmd.Process.Pid, target); err == nil {
					res.nice = nil // the fallback worked, in all but a forking instant
				} else {
					res.nice = fmt.Errorf("%w; nor the process group's after its start: %w", lowered, err)
				}
			}
		}
		req.done <- res
	}
}

// lowerThreadPriority sets the calling thread's nice value to instanceNice above its own (at most 19),
// returning the value (−1 when there is none lower) and why it could not.
func lowerThreadPriority() (target int, err error) {
	tid := syscall.Gettid()
	// The system call returns 20 − nice (1 to 40), so that no value reads as an error.
	own := 0 // the usual, when it cannot be read
	if raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil {
		own = 20 - raw
	}
	target = min(own+instanceNice, 19)
	if target <= own {
		return -1, fmt.Errorf("the harness already runs at nice %d, the lowest priority there is", own)
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, target); err != nil {
		return target, fmt.Errorf("cannot lower the spawning thread's CPU priority to nice %d: %w", target, err)
	}
	return target, nil
}

// startProcess starts cmd in a process group of its own, to be killed with the harness (Pdeathsig
// SIGKILL), at a lower CPU priority than the harness (instanceNice), from the spawner's thread. nice
// says why the process runs at the harness's priority after all (nil: it does not); the process runs
// either way.
func startProcess(cmd *exec.Cmd) (nice, err error) {
	spawnOnce.Do(func() {
		spawnQueue = make(chan spawnRequest)
		go spawner(spawnQueue)
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	req := spawnRequest{cmd: cmd, done: make(chan spawnResult, 1)}
	spawnQueue <- req
	res := <-req.done
	return res.nice, res.err
}

// maxInstanceOutput bounds what one instance may write into the run's log; the rest is dropped, with
// a line that says so.
const maxInstanceOutput = 1 << 20

// tailLines is how many of an instance's last output lines an error message quotes.
const tailLines = 12

// instanceOutput copies an instance's stdout and stderr into the run's log, each line prefixed with the
// instance's label ("[i3] "), up to maxInstanceOutput; it keeps the last lines of each stream for error
// messages.
type instanceOutput struct {
	label string
	w     io.Writer

	mu        sync.Mutex
	written   int
	truncated bool
	tails     [2][]string // stdout, stderr
	wg        sync.WaitGroup
}

func newInstanceOutput(label string, w io.Writer) *instanceOutput {
	if w == nil {
		w = io.Discard
	}
	return &instanceOutput{label: label, w: w}
}

// drain reads r until it ends (the process closed it, or died); stream is 0 for stdout, 1 for stderr.
func (o *instanceOutput) drain(r io.Reader, stream int) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		br := bufio.NewReaderSize(r, 4096)
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				o.line(bytes.TrimRight(line, "\r\n"), stream)
			}
			if err != nil && err != bufio.ErrBufferFull {
				return
			}
		}
	}()
}

func (o *instanceOutput) line(b []byte, stream int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := append(o.tails[stream], string(b))
	if len(t) > tailLines {
		t = t[len(t)-tailLines:]
	}
	o.tails[stream] = t
	if o.truncated {
		return
	}
	if o.written+len(b) > maxInstanceOutput {
		o.truncated = true
		_, _ = io.WriteString(o.w, "["+o.label+"] (more output dropped: an instance may write 1 MiB into this log)\n")
		return
	}
	o.written += len(b)
	msg := make([]byte, 0, len(o.label)+len(b)+4)
	msg = append(append(append(append(msg, '['), o.label...), "] "...), b...)
	_, _ = o.w.Write(append(msg, '\n'))
}

// harness writes a line of the harness's own about the instance, marked as such.
func (o *instanceOutput) harness(msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = io.WriteString(o.w, "["+o.label+"] harness: "+msg+"\n")
}

// wait returns once both streams have ended.
func (o *instanceOutput) wait() { o.wg.Wait() }

// tail is the instance's last lines of standard error (or, when it wrote none, of standard output),
// indented for an error message; "" when it wrote nothing.
func (o *instanceOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	lines, which := o.tails[1], "standard error"
	if len(lines) == 0 {
		lines, which = o.tails[0], "standard output"
	}
	if len(lines) == 0 {
		return "; it wrote nothing on standard output or standard error"
	}
	return "; its last lines on " + which + ":\n    " + strings.Join(lines, "\n    ")
}
