package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
)

// procInstance is one instance of a ProcessSystem: an OS process in a process group of its own, its
// Redis traffic recorded at the wire (one WireRecorder per data node, between the process and its
// fault link), its polls and beliefs served by an HTTP service of its own (process_service.go). It is
// the vinstance's Instance: Start starts the process and waits for POST /ready, Stop sends SIGTERM; a
// crash is runner.kill, which cuts the links and then kills the group (kill).
type procInstance struct {
	sys   *ProcessSystem
	r     *runner
	in    *vinstance
	label string // "i3": the slot, as instances.log prefixes the instance's lines
	wires []*WireRecorder
	nodes []string // the recorders' addresses, one per data node
	svc   *instanceService
	out   *instanceOutput
	clock *fakeClock // nil unless the run has clock faults

	ready chan readyReport // one report, from the first POST /ready

	mu       sync.Mutex
	cmd      *exec.Cmd
	stdin    *os.File // the harness's end of the instance's stdin: closed when the instance ends
	exited   chan struct{}
	exitErr  error
	running  bool // past its start: it called POST /ready and Start returned
	reaped   bool // the process has exited
	stopping bool // SIGTERM sent: an exit is the stop's outcome
	ending   bool // killed by the harness: an exit is no news
	samples  clockSamples
}

// newProcessInstance builds the instance in slot, with its links, wire recorders and service; nothing
// runs until Start.
func (r *runner) newProcessInstance(ps *ProcessSystem, slot int, id string) (*vinstance, error) {
	in := &vinstance{slot: slot, id: id, clock: clock.NewDrifting(clock.Real{}, 1)}
	in.pclock = clock.NewPausable(in.clock)
	p := &procInstance{sys: ps, r: r, in: in, label: fmt.Sprintf("i%d", slot), ready: make(chan readyReport, 1),
		exited: make(chan struct{})}
	in.proc, in.sut = p, p
	// Everything the recorders' and the service's goroutines read is in place before they start.
	p.out = newInstanceOutput(p.label, r.o.Log)
	if r.faketime != "" {
		var err error
		if p.clock, err = newFakeClock(r.clockDir, p.label); err != nil {
			return nil, err
		}
	}
	links, names, err := r.processLinks(slot)
	if err != nil {
		if p.clock != nil {
			p.clock.remove()
		}
		return nil, err
	}
	in.link = links[0]
	if len(links) > 1 {
		in.link = chaos.Fanout(links...)
	}
	fail := func(err error) (*vinstance, error) {
		p.closeWires()
		for _, l := range links {
			_ = l.Close()
		}
		if p.clock != nil {
			p.clock.remove()
		}
		return nil, err
	}
	for i, l := range links {
		w, err := NewWireRecorder(WireConfig{Recorder: r.rec, Instance: id, Node: names[i], Upstream: l.Addr(),
			DialTimeout: r.timing.OpTimeout, Classifier: ps, KeyPrefix: r.keyPrefix, LibraryPrefix: ps.keys.Prefix, NoteUnplaced: true, Dead: in.dead.Load,
			OnFault: p.wireFault, wire: in.atWire, hold: in.hold})
		if err != nil {
			return fail(err)
		}
		p.wires = append(p.wires, w)
		p.nodes = append(p.nodes, w.Addr())
	}
	if p.svc, err = newInstanceService(p); err != nil {
		return fail(err)
	}
	return in, nil
}

// processLinks creates the fault links of the instance in slot: one to the backend, or one per data
// node of a topology (independent nodes), with the nodes' names for the recorders ("" for one node).
func (r *runner) processLinks(slot int) ([]chaos.Link, []string, error) {
	name := fmt.Sprintf("%sslot-%d", r.linkPrefix, slot)
	if !several(r.backend) {
		l, err := r.proxies.NewLink(name, singleAddr(r.backend))
		if err != nil {
			return nil, nil, err
		}
		return []chaos.Link{l}, []string{""}, nil
	}
	var links []chaos.Link
	var names []string
	for _, n := range r.backend.Nodes() {
		if n.Sentinel {
			continue
		}
		l, err := r.proxies.NewLink(name+"-"+n.Name, n.Listen)
		if err != nil {
			for _, l := range links {
				_ = l.Close()
			}
			return nil, nil, err
		}
		links, names = append(links, l), append(names, n.Name)
	}
	if len(links) == 0 {
		return nil, nil, fmt.Errorf("sim: %s has no data node to link to", r.backend.About().Describe)
	}
	return links, names, nil
}

// environ is the instance's environment: the harness's own, the system's additions, and the protocol's
// variables (docs/protocol.md), which nothing else may set.
func (p *procInstance) environ() []string {
	r, t := p.r, p.r.timing
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) }
	fencing := "0"
	if r.sc.Fencing {
		fencing = "1"
	}
	proto := []string{
		"TENURE_PROTOCOL=1",
		"TENURE_INSTANCE_ID=" + p.in.id,
		"TENURE_SEED=" + strconv.FormatInt(instanceSeed(r.o.Seed, p.in.slot), 10),
		"TENURE_KIND=" + p.sys.kind,
		"TENURE_REDIS_ADDR=" + p.nodes[0],
		"TENURE_REDIS_NODES=" + strings.Join(p.nodes, ","),
		"TENURE_KEY_PREFIX=" + r.keyPrefix,
		"TENURE_SESSION_PREFIX=" + r.sessions.prefix,
		"TENURE_TARGETS=" + strings.Join(r.sessions.IDs(), ","),
		"TENURE_LEASE_TTL_MS=" + ms(t.LeaseTTL),
		"TENURE_RENEW_INTERVAL_MS=" + ms(t.RenewInterval),
		"TENURE_HEARTBEAT_INTERVAL_MS=" + ms(t.HeartbeatInterval),
		"TENURE_HEARTBEAT_TTL_MS=" + ms(t.HeartbeatTTL),
		"TENURE_DISCOVERY_INTERVAL_MS=" + ms(t.DiscoveryInterval),
		"TENURE_POLL_INTERVAL_MS=" + ms(t.PollInterval),
		"TENURE_POLL_DURATION_MS=" + ms(t.PollDuration),
		"TENURE_OP_TIMEOUT_MS=" + ms(t.OpTimeout),
		"TENURE_DRIFT_BOUND=" + strconv.FormatFloat(t.DriftBound, 'g', -1, 64),
		"TENURE_FENCING=" + fencing,
		"TENURE_READY_TIMEOUT_MS=" + ms(p.sys.readyTimeout),
		"TENURE_STOP_TIMEOUT_MS=" + ms(r.stopBound()),
		"TENURE_HARNESS_URL=" + p.svc.url,
	}
	set := map[string]bool{}
	for _, kv := range proto {
		set[kv[:strings.IndexByte(kv, '=')]] = true
	}
	var extra []string
	if p.clock != nil {
		extra = p.clock.environ(r.faketime)
		for _, kv := range extra {
			set[kv[:strings.IndexByte(kv, '=')]] = true
		}
	}
	var env []string
	for _, kv := range append(os.Environ(), p.sys.env...) {
		k, _, _ := strings.Cut(kv, "=")
		if k == "LD_PRELOAD" && p.clock != nil {
			continue // joined with libfaketime's below
		}
		if !set[k] {
			env = append(env, kv)
		}
	}
	return append(append(env, extra...), proto...)
}

// Start implements Instance: it starts the process and returns once it has called POST /ready, or
// fails when the process cannot start, exits first, or stays silent past the system's ready bound.
func (p *procInstance) Start(ctx context.Context) error {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return errors.Join(err, stdinR.Close(), stdinW.Close())
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return errors.Join(err, stdinR.Close(), stdinW.Close(), outR.Close(), outW.Close())
	}
	cmd := exec.Command(p.sys.command[0], p.sys.command[1:]...)
	cmd.Dir, cmd.Env = p.sys.dir, p.environ()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, outW, errW
	p.mu.Lock()
	if p.ending {
		p.mu.Unlock()
		return errors.Join(errDead, stdinR.Close(), stdinW.Close(), outR.Close(), outW.Close(), errR.Close(), errW.Close())
	}
	if p.clock != nil {
		p.clock.started(time.Now())
	}
	nice, err := startProcess(cmd)
	// The child holds its own copies now; the harness keeps only its ends.
	_, _, _ = stdinR.Close(), outW.Close(), errW.Close()
	if err != nil {
		p.mu.Unlock()
		_, _, _ = stdinW.Close(), outR.Close(), errR.Close()
		return fmt.Errorf("cannot start %s: %w", strings.Join(p.sys.command, " "), err)
	}
	p.cmd, p.stdin = cmd, stdinW
	p.mu.Unlock()
	if p.r.sysCPU != nil {
		p.r.sysCPU.add(cmd.Process.Pid) // its group: the pid of a group's leader is its ID
	}
	if nice != nil {
		msg := fmt.Sprintf("instance %s (pid %d) runs at the harness's CPU priority, not nice %d below it: %v; its CPU use competes with the harness's on equal terms",
			p.label, cmd.Process.Pid, instanceNice, nice)
		p.out.harness(msg)
		p.r.rec.Add(history.Event{Kind: history.KindNote, At: p.r.rec.Now(), Instance: p.in.id, Note: msg})
	}
	p.out.drain(outR, 0)
	p.out.drain(errR, 1)
	go p.reap()

	timer := time.NewTimer(p.sys.readyTimeout)
	defer timer.Stop()
	select {
	case rep := <-p.ready:
		if err := p.selfTest(rep); err != nil {
			return err
		}
		p.mu.Lock()
		p.running = true
		gone := p.reaped
		p.mu.Unlock()
		if gone {
			p.settleOutput()
			return fmt.Errorf("instance %s (%s) %s as soon as it called POST /ready%s", p.label, p.in.id, p.exitText(), p.out.tail())
		}
		return nil
	case <-p.exited:
		p.settleOutput()
		return fmt.Errorf("instance %s (%s) %s before it called POST /ready%s", p.label, p.in.id, p.exitText(), p.out.tail())
	case <-timer.C:
		return fmt.Errorf("instance %s (%s) did not call POST /ready within %v (the system's ready_timeout_ms)%s",
			p.label, p.in.id, p.sys.readyTimeout, p.out.tail())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reap waits for the process to end. An exit the harness did not cause, once the instance is running,
// is a crash of its own making: it is recorded as one.
func (p *procInstance) reap() {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.exitErr, p.reaped = err, true
	close(p.exited)
	news := p.running && !p.ending && !p.stopping
	p.mu.Unlock()
	if news {
		p.r.exitedByItself(p.in)
	}
}

// settleOutput waits a little for the output of a process that has exited to be read: a child it left
// behind may hold its pipes open.
func (p *procInstance) settleOutput() {
	done := make(chan struct{})
	go func() { p.out.wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(500 * time.Millisecond):
	}
}

// exitText says how the process ended, for messages: "exited with status 3", "was killed by signal
// terminated".
func (p *procInstance) exitText() string {
	p.mu.Lock()
	err := p.exitErr
	p.mu.Unlock()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	if err != nil {
		return "ended: " + err.Error()
	}
	return "exited with status 0"
}

// signal sends sig to the instance's process group; a group already gone is not an error.
func (p *procInstance) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sim: %s to instance %s: %w", sig, p.in.id, err)
	}
	return nil
}

// Stop implements Instance: a graceful stop is SIGTERM to the group, then waiting for the process to
// exit until ctx ends (runner.stop bounds it; past the bound the instance is killed and the stop
// reported as not graceful). Its error is the process's answer: an exit status other than 0, or death
// by the SIGTERM itself (a program that does not handle it releases nothing).
func (p *procInstance) Stop(ctx context.Context) error {
	p.mu.Lock()
	p.stopping = true
	started := p.cmd != nil
	p.mu.Unlock()
	if !started {
		return nil
	}
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		return fmt.Errorf("did not stop gracefully within %v of SIGTERM: %w", p.r.stopBound(), ctx.Err())
	}
	p.mu.Lock()
	err := p.exitErr
	p.mu.Unlock()
	if err == nil {
		return nil
	}
	return fmt.Errorf("instance %s %s on SIGTERM%s", p.label, p.exitText(), p.out.tail())
}

// kill ends the instance for good: SIGKILL to its group (its links are already cut: see runner.kill),
// its service and stdin closed, its wire recorders closed once the process is gone, so that the
// commands it left unanswered are recorded unknown.
func (p *procInstance) kill() error {
	p.mu.Lock()
	p.ending = true
	cmd, stdin := p.cmd, p.stdin
	p.mu.Unlock()
	err := p.signal(syscall.SIGKILL)
	p.svc.close()
	if stdin != nil {
		_ = stdin.Close()
	}
	if cmd != nil {
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			err = errors.Join(err, fmt.Errorf("sim: instance %s (pid %d) still runs 10 s after SIGKILL", p.in.id, cmd.Process.Pid))
		}
		if p.r.sysCPU != nil {
			p.r.sysCPU.remove(cmd.Process.Pid)
		}
	}
	p.closeWires()
	if p.clock != nil {
		p.noteClock()
		p.clock.remove()
	}
	return err
}

func (p *procInstance) closeWires() {
	for _, w := range p.wires {
		_ = w.Close()
	}
}

// wireFault is told when the instance's traffic cannot be read as Redis commands: the instance does not
// speak RESP (or not within the decoder's limits), and nothing it does can be judged. The run stops.
func (p *procInstance) wireFault(err error) {
	if p.in.dead.Load() {
		return
	}
	p.r.fail(fmt.Errorf("sim: instance %s (%s) sent Redis what is not a RESP command: %v%s", p.label, p.in.id, err, p.out.tail()))
}

// exitedByItself records an instance that ended without the harness asking: a crash, as it is.
func (r *runner) exitedByItself(in *vinstance) {
	if in.dead.Load() {
		return
	}
	p := in.proc
	p.settleOutput()
	r.rec.Add(history.Event{Kind: history.KindNote, At: r.rec.Now(), Instance: in.id,
		Note: fmt.Sprintf("instance %s %s by itself", p.label, p.exitText())})
	_ = r.kill(in)
	r.rec.Add(history.Event{Kind: history.KindLifecycle, At: r.rec.Now(), Instance: in.id, Lifecycle: &history.Lifecycle{Change: history.LifeCrashed}})
}
