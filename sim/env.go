package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
)

// runner is one run's fleet and surroundings; it implements chaos.Env.
type runner struct {
	o          Options
	sc         Scenario
	timing     Timing
	rec        *history.Recorder
	backend    deploy.Deployment
	proxies    chaos.Proxies
	keyPrefix  string
	sessions   *sessionStore
	svc        *endpointService
	classifier OpClassifier
	logger     *slog.Logger
	pg         *pgTarget // set for systems that use PostgreSQL
	linkPrefix string    // names proxies on a shared toxiproxy-server
	// landings learns from the instances' links when their held requests land (history.Op.Landed).
	landings *landings
	// faketime is libfaketime's path when a process system's run has clock faults, and clockDir holds
	// the instances' spec files (process_clock.go).
	faketime, clockDir string
	// sysCPU measures the CPU time of a process system's instances for the lag monitor (lag.go); nil
	// for an in-process system.
	sysCPU *systemCPU
	// abort ends the run with an error that makes its history worthless (an instance that does not
	// speak RESP); set by Run.
	abort context.CancelCauseFunc

	mu      sync.Mutex
	holders map[string]string // endpoint -> instance that last reported holding it
	pollers map[string]string // endpoint -> process instance whose poll of it last completed
	rng     *rand.Rand
	next    int // next slot number
	live    []*vinstance
	ended   []*vinstance
}

var (
	_ chaos.Env     = (*runner)(nil)
	_ chaos.Staller = (*runner)(nil)

	_ chaos.Signaller    = (*runner)(nil)
	_ chaos.StartAborter = (*runner)(nil)
)

// Live implements chaos.Env.
func (r *runner) Live() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, len(r.live))
	for i, in := range r.live {
		ids[i] = in.id
	}
	return ids
}

func (r *runner) find(id string) (*vinstance, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, in := range r.live {
		if in.id == id {
			return in, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", chaos.ErrNoTarget, id)
}

// remove takes an instance out of the live list.
func (r *runner) remove(in *vinstance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.live {
		if x == in {
			r.live = append(r.live[:i], r.live[i+1:]...)
			break
		}
	}
	r.ended = append(r.ended, in)
}

// StartInstance implements chaos.Env: a new instance with a fresh ID, its own proxy, client and clock.
func (r *runner) StartInstance(ctx context.Context) (string, error) {
	in, ictx, err := r.newInstance()
	if err != nil {
		return "", err
	}
	// Start's context is the instance's lifetime (cancelling it is a crash), so the caller's ctx is
	// watched separately: an interrupted run must not wait on a start that hangs.
	started := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			in.cancel()
		case <-started:
		}
	}()
	err = protect("Start", func() error { return in.sut.Start(ictx) })
	close(started)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		kerr := r.kill(in)
		r.rec.Add(history.Event{Kind: history.KindLifecycle, At: r.rec.Now(), Instance: in.id, Lifecycle: &history.Lifecycle{Change: history.LifeCrashed}})
		return "", errors.Join(fmt.Errorf("sim: %s: start instance %s: %w", r.o.System.Name(), in.id, err), kerr)
	}
	return in.id, nil
}

// AbortStart implements chaos.StartAborter: the instance's link is cut before it starts, it is stopped
// after the given time while its Start retries, then its link is healed and it is watched for one
// renewal interval plus one call timeout (the longest a retrying start waits between attempts, and the
// attempt itself) before it is killed.
func (r *runner) AbortStart(ctx context.Context, after time.Duration) (string, map[string]string, error) {
	in, ictx, err := r.newInstance()
	if err != nil {
		return "", nil, err
	}
	notes := map[string]string{}
	var errs []error
	finish := func() (string, map[string]string, error) {
		errs = append(errs, r.kill(in))
		r.rec.Add(history.Event{Kind: history.KindLifecycle, At: r.rec.Now(), Instance: in.id, Lifecycle: &history.Lifecycle{Change: history.LifeStopped}})
		return in.id, notes, errors.Join(errs...)
	}
	if err := in.link.Partition(); err != nil {
		errs = append(errs, fmt.Errorf("sim: cut the link of %s: %w", in.id, err))
		return finish()
	}
	started := make(chan error, 1)
	go func() { started <- protect("Start", func() error { return in.sut.Start(ictx) }) }()
	deadline := time.After(after)
	select {
	case err := <-started:
		if err != nil {
			errs = append(errs, fmt.Errorf("sim: Start of %s gave up after %v while its link was cut, before it was stopped: it should retry until stopped (returned %v)",
				in.id, r.rec.Now(), err))
			return finish()
		}
		// A Start that returns at once and works in the background is a design of its own: what this
		// fault judges is then only the stop, and that nothing is sent once it returned.
		notes["start"] = "returned at once, before the backend was reached: the instance works in the background"
		started = nil
		select {
		case <-ctx.Done():
			return finish()
		case <-deadline:
		}
	case <-ctx.Done():
		return finish()
	case <-deadline:
	}
	serr, perr := r.stop(ctx, in)
	if serr != nil {
		notes["stop_error"] = serr.Error()
	}
	if perr != nil {
		errs = append(errs, fmt.Errorf("sim: graceful stop of %s during its start: %w", in.id, perr))
	}
	if started != nil { // Start was still running when Stop began
		select {
		case err := <-started:
			switch {
			case err == nil:
				errs = append(errs, fmt.Errorf("sim: Start of %s reported success although it was stopped while its link was cut", in.id))
			case errors.As(err, new(*panicError)):
				errs = append(errs, err)
			default:
				notes["start_error"] = err.Error()
			}
		case <-time.After(r.timing.OpTimeout):
			errs = append(errs, fmt.Errorf("sim: Start of %s was still running %v after its Stop returned", in.id, r.timing.OpTimeout))
		}
	}
	healed := r.rec.Now()
	if err := in.link.Heal(); err != nil {
		errs = append(errs, fmt.Errorf("sim: heal the link of %s: %w", in.id, err))
	}
	if !sleepCtx(ctx, r.timing.RenewInterval+r.timing.OpTimeout) {
		return finish()
	}
	sent := 0
	for _, e := range r.rec.Events() {
		if e.Kind == history.KindOp && e.Instance == in.id && e.At >= healed {
			sent++
		}
	}
	if sent > 0 {
		errs = append(errs, fmt.Errorf("sim: %s sent %d backend commands after its Stop returned and its link healed", in.id, sent))
	}
	return finish()
}

// newInstance builds a new instance with a fresh ID, its own proxy, client and clock, adds it to the
// fleet and records its start; it returns the context to start it with (cancelling it is a crash).
func (r *runner) newInstance() (*vinstance, context.Context, error) {
	r.mu.Lock()
	slot := r.next
	r.next++
	suffix := r.rng.Uint32()
	r.mu.Unlock()
	boot := time.Now()
	id := fmt.Sprintf("i%d-%d-%08x", slot, boot.UnixNano(), suffix)

	var in *vinstance
	var err error
	if ps, ok := r.o.System.(*ProcessSystem); ok {
		in, err = r.newProcessInstance(ps, slot, id)
	} else {
		in, err = r.newInProcessInstance(slot, id)
	}
	if err != nil {
		return nil, nil, err
	}
	if r.landings != nil && r.pg == nil { // a PostgreSQL system's link carries no Redis commands
		r.landings.observe(in.link, id)
	}
	ictx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	r.mu.Lock()
	// Keep the live list in slot order, so that "slot 0" in a schedule is the first instance created
	// even when the fleet starts concurrently.
	pos := len(r.live)
	for pos > 0 && r.live[pos-1].slot > slot {
		pos--
	}
	r.live = append(r.live, nil)
	copy(r.live[pos+1:], r.live[pos:])
	r.live[pos] = in
	r.mu.Unlock()
	r.rec.Add(history.Event{Kind: history.KindLifecycle, At: r.rec.Now(), Instance: id, Lifecycle: &history.Lifecycle{Change: history.LifeStarted}})
	return in, ictx, nil
}

// newInProcessInstance builds the system's Instance in slot with its link, recording client and clock.
func (r *runner) newInProcessInstance(slot int, id string) (*vinstance, error) {
	link, client, dial, err := r.instanceLink(slot)
	if err != nil {
		return nil, err
	}
	in := &vinstance{slot: slot, id: id, link: link, client: client, clock: clock.NewDrifting(clock.Real{}, 1)}
	in.pclock = clock.NewPausable(in.clock)
	in.client.AddHook(&recordingHook{instance: id, rec: r.rec, classifier: r.classifier, dead: in.dead.Load,
		hold: in.hold, wire: in.atWire, defaults: defaultClassifier{leasePrefix: r.keyPrefix + "lease:"}})
	nodes := r.nodeClients(in, dial)
	cfg := InstanceConfig{
		Nodes: nodes,
		ID:    id, Seed: instanceSeed(r.o.Seed, slot), Client: in.client, Clock: in.pclock, Timing: r.timing,
		KeyPrefix: r.keyPrefix, SessionPrefix: r.sessions.prefix,
		Poll: in.poll(r.svc), Observe: in.observe(r.rec, r.believe),
		Logger: r.logger.With("instance", id), Targets: r.sessions.IDs(),
	}
	if r.pg != nil {
		cfg.Postgres = &PostgresTarget{URL: r.pg.urlVia(link.Addr()), Table: r.pg.table}
	}
	sut, err := r.o.System.NewInstance(cfg)
	if err != nil {
		in.closeClients()
		_ = link.Close()
		return nil, fmt.Errorf("sim: %s: new instance: %w", r.o.System.Name(), err)
	}
	in.sut = sut
	return in, nil
}

// instanceLink creates the link an instance's backend traffic flows through and the Redis client that
// uses it. On one node the link is one proxy; on a deployment of several it is one proxy per node, and
// the client is the deployment's own, dialing each node through the instance's proxy for it.
func (r *runner) instanceLink(slot int) (chaos.Link, redis.UniversalClient, deploy.Dialer, error) {
	// Proxies are named by slot, so that whatever a link derives from its name (the latency jitter
	// seed) follows the run's seed and not the clock in the instance ID.
	name := fmt.Sprintf("%sslot-%d", r.linkPrefix, slot)
	if several(r.backend) && r.pg == nil {
		return deploymentLinks(r.proxies, name, r.backend, deploy.ClientOptions{
			DialTimeout: r.timing.OpTimeout, ReadTimeout: r.timing.OpTimeout, WriteTimeout: r.timing.OpTimeout,
			PoolSize: 8, MaxRetries: 3,
		})
	}
	// The link carries the system's backend traffic: Redis, or PostgreSQL for systems that use it.
	upstream, clientAddr := singleAddr(r.backend), ""
	if r.pg != nil {
		upstream, clientAddr = r.pg.addr, singleAddr(r.backend)
	}
	link, err := r.proxies.NewLink(name, upstream)
	if err != nil {
		return nil, nil, nil, err
	}
	if clientAddr == "" {
		clientAddr = link.Addr()
	}
	client := redis.NewClient(&redis.Options{
		Addr:                  clientAddr,
		DialTimeout:           r.timing.OpTimeout,
		ReadTimeout:           r.timing.OpTimeout,
		WriteTimeout:          r.timing.OpTimeout,
		ContextTimeoutEnabled: true,
		PoolSize:              8,
		// go-redis's default: re-send after a network error. Left on deliberately: lost replies
		// followed by retries are one of the faults a lease must survive.
		MaxRetries: 3,
		Dialer:     virtualDialer(r.proxies),
	})
	return link, client, nil, nil
}

// instanceSeed mixes the run's seed with a slot number.
func instanceSeed(seed int64, slot int) int64 {
	return int64(uint64(seed) ^ uint64(slot+1)*0x9E3779B97F4A7C15)
}

// kill marks an instance dead, cuts its network and cancels its work, in that order, so nothing it
// does on the way out reaches the backend or the endpoints. A poll that arrived at an endpoint before
// the instance was marked dead was in flight when it died; the endpoint service's barrier guarantees
// that none arrives after.
func (r *runner) kill(in *vinstance) error {
	if in.dead.Swap(true) {
		return nil
	}
	r.svc.barrier()
	err := in.link.Kill()
	if in.proc != nil {
		// A process dies before anything of it is woken: nothing it does on the way out reaches anyone.
		err = errors.Join(err, in.proc.kill())
	}
	// Whatever the instance was blocked on wakes to find its context cancelled and its link cut.
	in.fmu.Lock()
	in.unfreeze()
	in.fmu.Unlock()
	in.stall.thaw()
	in.cancel()
	in.closeClients()
	r.remove(in)
	if err != nil {
		return fmt.Errorf("sim: cut the link of %s: %w", in.id, err)
	}
	return nil
}

// Crash implements chaos.Env.
func (r *runner) Crash(id string) error {
	in, err := r.find(id)
	if err != nil {
		return err
	}
	err = r.kill(in)
	r.rec.Add(history.Event{Kind: history.KindLifecycle, At: r.rec.Now(), Instance: id, Lifecycle: &history.Lifecycle{Change: history.LifeCrashed}})
	return err
}

// Stop implements chaos.Env: a graceful stop bounded by two lease TTLs.
func (r *runner) Stop(ctx context.Context, id string) error {
	in, err := r.find(id)
	if err != nil {
		return err
	}
	serr, perr := r.stop(ctx, in)
	kerr := r.kill(in)
	r.rec.Add(history.Event{Kind: history.KindLifecycle, At: r.rec.Now(), Instance: id, Lifecycle: &history.Lifecycle{Change: history.LifeStopped}})
	switch {
	case perr != nil || kerr != nil:
		if perr = errors.Join(serr, perr); perr != nil {
			return errors.Join(fmt.Errorf("sim: graceful stop of %s: %w", id, perr), kerr)
		}
		return kerr
	case serr != nil:
		// The instance stopped; what its Stop returned (releases it could not send, say) is its answer.
		return &chaos.StopAnswer{Err: fmt.Errorf("graceful stop of %s: %w", id, serr)}
	}
	return nil
}

// SignalStop implements chaos.Signaller: the instance's start context is cancelled, as
// signal.NotifyContext does on SIGTERM, with its link left up; then it is stopped gracefully (bounded
// as Stop is) and killed. Stop's error is the system's answer (stopErr); a panic, or a Stop that does
// not return within its bound, is the fault's failure (err).
func (r *runner) SignalStop(ctx context.Context, id string) (stopErr, err error) {
	in, err := r.find(id)
	if err != nil {
		return nil, err
	}
	in.cancel()
	serr, perr := r.stop(ctx, in)
	kerr := r.kill(in)
	r.rec.Add(history.Event{Kind: history.KindLifecycle, At: r.rec.Now(), Instance: id, Lifecycle: &history.Lifecycle{Change: history.LifeStopped}})
	if perr != nil {
		perr = fmt.Errorf("sim: graceful stop of %s: %w", id, perr)
	}
	return serr, errors.Join(perr, kerr)
}

// stop calls the instance's Stop, bounded by two lease TTLs. The bound holds even for a system whose
// Stop ignores its context, or an instance that cannot make progress (paused, or its calls stalled,
// which no context frees): past it the caller kills the instance, which also wakes whatever it was
// blocked on. It returns Stop's own error (serr) apart from a panic or an overrun (perr).
func (r *runner) stop(ctx context.Context, in *vinstance) (serr, perr error) {
	sctx, cancel := context.WithTimeout(ctx, r.stopBound())
	defer cancel()
	type outcome struct{ serr, perr error }
	stopped := make(chan outcome, 1)
	go func() {
		var o outcome
		o.perr = protect("Stop", func() error {
			o.serr = in.sut.Stop(sctx)
			return nil
		})
		stopped <- o
	}()
	select {
	case o := <-stopped:
		return o.serr, o.perr
	case <-sctx.Done():
		if in.proc != nil {
			return nil, fmt.Errorf("did not stop gracefully: still running %s after SIGTERM, killed", r.stopBound())
		}
		return nil, fmt.Errorf("did not stop within %s: %w", r.stopBound(), sctx.Err())
	}
}

// stopBound is how long a graceful stop may take before the instance is killed.
func (r *runner) stopBound() time.Duration { return 2 * r.timing.LeaseTTL }

// panicError is a panic of a system's Start or Stop, caught by protect.
type panicError struct{ msg string }

func (e *panicError) Error() string { return e.msg }

// protect runs f (a system's Start or Stop), turning a panic into an error that names the call and
// where it panicked, so that a run reports it instead of dying with it.
func protect(call string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			stack := strings.Split(string(debug.Stack()), "\n")
			err = &panicError{msg: fmt.Sprintf("%s panicked: %v\n%s", call, p, strings.Join(stack[:min(len(stack), 24)], "\n"))}
		}
	}()
	return f()
}

// Freeze implements chaos.Env. The pause takes hold at the instance's next poll — after its decision
// to poll and its validity check, before the poll reaches the endpoint: the worst moment, which only
// fencing can answer — or after two poll intervals, whichever comes first (an instance that holds
// nothing may never poll; one that does polls once per interval plus the poll's own duration). From then on its clock stops (reads block, timers wait), and its polls and
// Redis calls block before they leave and before their replies are handed back. A system whose backend
// traffic is PostgreSQL has no Redis hook to hold its calls: its link is partitioned instead, so its
// calls during the pause fail or time out rather than wait.
func (r *runner) Freeze(id string) error {
	in, err := r.find(id)
	if err != nil {
		return err
	}
	in.fmu.Lock()
	defer in.fmu.Unlock()
	if in.freezing != nil || in.pclock.Paused() {
		return nil // already pausing
	}
	in.gate.freeze()
	off := make(chan struct{})
	in.freezing = off
	hit := in.gate.hit()
	go func() {
		t := time.NewTimer(2 * r.timing.PollInterval)
		defer t.Stop()
		select {
		case <-hit:
		case <-t.C:
		case <-off:
			return
		}
		in.fmu.Lock()
		defer in.fmu.Unlock()
		if in.freezing != off {
			return // thawed or killed meanwhile
		}
		in.freezing = nil
		r.freezeNow(in)
	}()
	return nil
}

// freezeNow pauses an instance at once; in.fmu is held.
func (r *runner) freezeNow(in *vinstance) {
	in.pclock.Pause()
	in.calls.freeze()
	if in.proc != nil {
		if err := in.proc.signal(syscall.SIGSTOP); err != nil {
			r.logger.Error("stop a paused instance's process group", "instance", in.id, "err", err)
		}
	}
	if r.pg != nil {
		if err := in.link.Partition(); err != nil {
			r.logger.Error("partition a paused instance's link", "instance", in.id, "err", err)
		}
	}
	r.rec.Add(history.Event{Kind: history.KindLifecycle, At: r.rec.Now(), Instance: in.id, Lifecycle: &history.Lifecycle{Change: history.LifePaused}})
}

// unfreeze calls off a pause that has not taken hold, or ends one that has. in.fmu is held.
func (in *vinstance) unfreeze() {
	if in.freezing != nil {
		close(in.freezing)
		in.freezing = nil
	}
	if in.proc != nil && in.pclock.Paused() {
		_ = in.proc.signal(syscall.SIGCONT)
	}
	in.pclock.Resume()
	in.calls.thaw()
	in.gate.thaw()
}

// Thaw implements chaos.Env.
func (r *runner) Thaw(id string) error {
	in, err := r.find(id)
	if err != nil {
		return nil // crashed meanwhile: nothing to wake
	}
	in.fmu.Lock()
	defer in.fmu.Unlock()
	if r.pg != nil && in.pclock.Paused() {
		err = in.link.Heal()
	}
	if in.pclock.Paused() {
		// The record comes first: whatever the instance does on waking happens after it.
		r.rec.Add(history.Event{Kind: history.KindLifecycle, At: r.rec.Now(), Instance: id, Lifecycle: &history.Lifecycle{Change: history.LifeResumed}})
	}
	in.unfreeze()
	return err
}

// Stall implements chaos.Staller: the instance's Redis calls block, neither answered nor failed, until
// Unstall, while its clock, timers and polls go on.
func (r *runner) Stall(id string) error {
	in, err := r.find(id)
	if err != nil {
		return err
	}
	if r.pg != nil {
		return fmt.Errorf("%w: a stall holds Redis calls, and %s talks to PostgreSQL", chaos.ErrUnsupported, r.o.System.Name())
	}
	if in.proc != nil {
		return fmt.Errorf("%w: a stall holds calls inside the client, and %s is a process", chaos.ErrUnsupported, r.o.System.Name())
	}
	in.stall.freeze()
	return nil
}

// Unstall implements chaos.Staller.
func (r *runner) Unstall(id string) error {
	in, err := r.find(id)
	if err != nil {
		return nil // crashed meanwhile
	}
	in.stall.thaw()
	return nil
}

// SetClockRate implements chaos.Env.
func (r *runner) SetClockRate(id string, rate float64) error {
	in, err := r.find(id)
	if err != nil {
		return err
	}
	if rate <= 0 {
		return fmt.Errorf("sim: clock rate must be positive (got %g)", rate)
	}
	if in.proc != nil {
		if err := in.proc.setClockRate(rate); err != nil {
			return err
		}
	}
	in.clock.SetRate(rate)
	return nil
}

// Link implements chaos.Env.
func (r *runner) Link(id string) (chaos.Link, error) {
	in, err := r.find(id)
	if err != nil {
		return nil, err
	}
	return in.link, nil
}

// Holder implements chaos.Env.
func (r *runner) Holder(endpoint string) (string, bool) {
	r.mu.Lock()
	id, ok := r.holders[endpoint]
	if !ok {
		// A process system need not report beliefs: the instance the resource last served is the
		// holder as far as anyone can tell.
		id, ok = r.pollers[endpoint]
	}
	r.mu.Unlock()
	if !ok {
		return "", false
	}
	if _, err := r.find(id); err != nil {
		return "", false
	}
	return id, true
}

// believe tracks the latest holder of each endpoint from the beliefs instances report.
func (r *runner) believe(id, endpoint string, b history.Belief) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holders == nil {
		r.holders = map[string]string{}
	}
	switch {
	case b.Held:
		r.holders[endpoint] = id
	case r.holders[endpoint] == id:
		delete(r.holders, endpoint)
	}
}

// polled notes that a process instance's poll of endpoint completed (see Holder).
func (r *runner) polled(endpoint, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pollers == nil {
		r.pollers = map[string]string{}
	}
	r.pollers[endpoint] = id
}

// fail ends the run with err (see runner.abort).
func (r *runner) fail(err error) {
	if r.abort != nil {
		r.abort(&fatalError{err})
	}
}

// fatalError is why a run was ended early with nothing worth judging.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Backend implements chaos.Env.
func (r *runner) Backend() chaos.Backend { return r.backend }

// Sessions implements chaos.Env.
func (r *runner) Sessions() chaos.Sessions { return r.sessions }

// crashAll ends every live instance at the end of a run.
func (r *runner) crashAll() {
	r.mu.Lock()
	live := append([]*vinstance(nil), r.live...)
	r.mu.Unlock()
	for _, in := range live {
		_ = r.kill(in) // the run is over; a link that will not close is closed with the proxies
	}
}
