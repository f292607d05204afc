package sim

import (
	"bufio"
	"bytes"
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
type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce  sync.Once
	spawnQueue chan spawnRequest
)

func spawner(queue <-chan spawnRequest) {
	runtime.LockOSThread() // never unlocked: see above
	for req := range queue {
		req.done <- req.cmd.Start()
	}
}

// startProcess starts cmd in a process group of its own, to be killed with the harness (Pdeathsig
// SIGKILL), from the spawner's thread.
func startProcess(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnQueue = make(chan spawnRequest)
		go spawner(spawnQueue)
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	req := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawnQueue <- req
	return <-req.done
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
