package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/clock"
)

// Elector contends for one role on a Backend and, when it wins, keeps the leadership until Stop, until
// the context given to Start ends, or until it can no longer prove it holds the role. Several roles in
// one process means several Electors (they may share a Backend).
type Elector struct {
	b   Backend
	cfg Config
	log *slog.Logger
	m   *metrics

	events chan Event

	mu      sync.Mutex
	state   State
	term    uint64
	leader  string
	cur     *leadership // non-nil while leading
	left    *leftover   // what the end of Start's context left held, for Stop (see shutdown.go)
	started bool
	stopCh  chan struct{} // closed by Stop
	done    chan struct{} // closed when the run loop has returned

	guardLogged time.Time // the end of the last fresh-dataset guard logged (run loop only)
}

// leadership is one term of this elector: its context and the in-flight work counted against it.
type leadership struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	term    uint64
	since   time.Time
	keeper  *keeper
	mu      sync.Mutex
	n       int           // in-flight work
	closing bool          // no new work may join
	idle    chan struct{} // closed when closing and n == 0
}

// New builds an elector for cfg.Role on b. It validates cfg and fills InstanceID when empty; it does not
// touch the backend (Start does).
func New(b Backend, cfg Config) (*Elector, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: backend must not be nil", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Registerer, cfg.Role, b)
	if err != nil {
		return nil, fmt.Errorf("election: register metrics for role %q: %w", cfg.Role, err)
	}
	return &Elector{
		b: b, cfg: cfg, m: m,
		log:    cfg.Logger.With("role", cfg.Role, "instance", cfg.InstanceID),
		events: make(chan Event, 64),
		stopCh: make(chan struct{}),
		done:   make(chan struct{}),
	}, nil
}

// ID returns this elector's instance ID.
func (e *Elector) ID() string { return e.cfg.InstanceID }

// Role returns the role this elector contends for.
func (e *Elector) Role() string { return e.cfg.Role }

// Start waits until the backend answers, then contends in the background and returns. Contending goes
// on until Stop or until ctx ends. An Elector runs once: a second Start returns ErrAlreadyStarted.
//
// A backend that does not answer yet (starting up, overloaded, briefly unreachable) is asked again after a
// jittered backoff (RetryInterval/4 doubling up to RetryInterval, drawn from Rand, on Clock), each failure
// logged and counted in tenure_election_start_retries_total, until ctx ends or Stop is called: then Start
// returns an error wrapping ErrBackendUnavailable and the cause, and the elector is done.
//
// When ctx ends the elector stops at once: the leader context is cancelled and nothing more is sent.
// A Stop that follows (the pattern of signal.NotifyContext, then Stop) releases what is still held, so
// a standby takes over within milliseconds. Without Stop it is a crash: nothing is released. On Redis
// the holding expires within TTL. On PostgreSQL the lock lives as long as the role's session: a process
// that really dies closes it at once; one that lives on keeps it until the backend is closed or the
// server ends the idle session (see PostgresBackend).
func (e *Elector) Start(ctx context.Context) error {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return ErrAlreadyStarted
	}
	e.started = true
	e.mu.Unlock()

	if err := e.awaitBackend(ctx); err != nil {
		close(e.done)
		return err
	}
	go e.run(ctx)
	return nil
}

// awaitBackend asks the backend who leads until it answers, backing off between failed attempts.
func (e *Elector) awaitBackend(ctx context.Context) error {
	backoff := max(e.cfg.RetryInterval/4, time.Millisecond)
	for attempt := 1; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, e.cfg.OpTimeout)
		_, err := e.b.Leader(pctx, e.cfg.Role)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || e.stopping() {
			cause := ctx.Err()
			if cause == nil {
				cause = ErrStopped
			}
			return fmt.Errorf("%w: role %q after %d attempts: %w", ErrBackendUnavailable, e.cfg.Role, attempt, errors.Join(err, cause))
		}
		// Full jitter over the upper half, so electors started together spread out.
		d := backoff/2 + time.Duration(e.cfg.Rand.Int64N(int64(backoff/2)+1))
		e.m.startRetries.Inc()
		e.log.Warn("election backend not answering at start; retrying", "attempt", attempt, "retry_in", d, "err", err)
		var none <-chan struct{}
		e.wait(ctx, d, &none)
		backoff = min(2*backoff, e.cfg.RetryInterval)
	}
}

// Stop ends the election gracefully: when leading, it cancels the leader context, waits for in-flight
// work (at most HandoffTimeout), releases the role so a standby takes over at once, and calls
// OnStoppedLeading. After Start's context has ended it still waits for that work and releases what the
// elector held when the context ended. It returns when the elector has stopped and released, or when
// ctx ends; an error says what could not be released.
func (e *Elector) Stop(ctx context.Context) error {
	e.mu.Lock()
	if !e.started {
		e.mu.Unlock()
		return ErrNotStarted
	}
	select {
	case <-e.stopCh:
	default:
		close(e.stopCh)
	}
	e.mu.Unlock()
	select {
	case <-e.done:
		return e.releaseLeftover(ctx)
	case <-ctx.Done():
		return fmt.Errorf("election: stop role %q: %w", e.cfg.Role, ctx.Err())
	}
}

// Done is closed when the elector has stopped (after Stop, or after Start's context ended).
func (e *Elector) Done() <-chan struct{} { return e.done }

// IsLeader reports whether this elector leads now: acquired, and the local deadline not passed. It
// checks the deadline itself, so it turns false at the deadline even before the elector's goroutine has
// noticed.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	l := e.cur
	e.mu.Unlock()
	return l != nil && l.keeper.valid(e.cfg.Clock.Now())
}

// Leader returns the instance ID of the last observed leader (this one's while leading), or "".
func (e *Elector) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader
}

// State returns the elector's current state.
func (e *Elector) State() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// Term returns the term of the current leadership, or of the last one if not leading (0 if none).
func (e *Elector) Term() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.term
}

// Events returns the elector's event stream. Events are dropped when the buffer (64) is full: State,
// IsLeader and Term always give the latest truth.
func (e *Elector) Events() <-chan Event { return e.events }

func (e *Elector) emit(ev Event) {
	ev.Role = e.cfg.Role
	ev.Time = e.cfg.Clock.Now()
	select {
	case e.events <- ev:
	default:
	}
}

// setState moves to s, emitting StateChanged when it differs. Callers hold e.mu.
func (e *Elector) setStateLocked(s State) {
	if e.state == s {
		return
	}
	prev := e.state
	e.state = s
	e.emit(Event{Type: StateChanged, State: s, Prev: prev})
}

func (e *Elector) setState(s State) {
	e.mu.Lock()
	e.setStateLocked(s)
	e.mu.Unlock()
}

// observe records id as the current leader and calls OnNewLeader when it changed.
func (e *Elector) observe(id string) {
	e.mu.Lock()
	changed := id != "" && id != e.leader
	if changed {
		e.leader = id
	}
	e.mu.Unlock()
	if changed {
		e.log.Info("election new leader observed", "leader", id)
		if e.cfg.OnNewLeader != nil {
			e.cfg.OnNewLeader(id)
		}
	}
}

func (e *Elector) stopping() bool {
	select {
	case <-e.stopCh:
		return true
	default:
		return false
	}
}

// wait blocks for d on the elector's clock, until a release hint arrives, or until stop or ctx. A
// closed hint channel is set to nil, so a dead subscription degrades to plain retries.
func (e *Elector) wait(ctx context.Context, d time.Duration, hint *<-chan struct{}) {
	t := e.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case _, ok := <-*hint:
		if !ok {
			*hint = nil
		}
	case <-e.stopCh:
	case <-ctx.Done():
	}
}

func (e *Elector) run(ctx context.Context) {
	defer close(e.done)
	defer e.setState(Follower)

	if e.cfg.StartJitter > 0 {
		j := time.Duration(e.cfg.Rand.Int64N(int64(e.cfg.StartJitter) + 1))
		var none <-chan struct{}
		e.wait(ctx, j, &none)
	}
	var hint <-chan struct{}
	if n, ok := e.b.(Notifier); ok {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// End the subscription on Stop; the goroutine also ends with the run (cancel), so a Start
		// context that ends without a Stop leaves nothing behind.
		go func() {
			select {
			case <-e.stopCh:
				cancel()
			case <-sctx.Done():
			}
		}()
		h, err := n.Subscribe(sctx, e.cfg.Role)
		if err != nil {
			e.log.Warn("election release notifications unavailable; relying on RetryInterval", "err", err)
		} else {
			hint = h
		}
	}

	var lastTerm uint64
	reissued := false // a stale holding was just released to get a new term
	quick := false    // the last wait was an immediate retry (see nextAttempt)
	undid := false    // this pass released an abandoned term of this instance (see below)
	for ctx.Err() == nil && !e.stopping() {
		// An abandoned term is released at most once per wait: a pass right after such a release
		// waits instead, so a backend that keeps naming this instance cannot make it loop. The limit
		// holds for that one pass only; kept longer (across a leadership, or failed attempts) it would
		// leave the next abandoned term on the backend until its expiry.
		justUndid := undid
		undid = false
		sent := e.cfg.Clock.Now()
		actx, cancel := context.WithTimeout(ctx, e.cfg.OpTimeout)
		term, ok, err := e.b.TryAcquire(actx, e.cfg.Role, e.cfg.InstanceID, e.cfg.TTL)
		cancel()
		switch {
		case err != nil:
			if ctx.Err() != nil {
				e.abandon(leftover{unknown: true})
				return
			}
			e.log.Warn("election attempt failed", "err", err)
			e.setState(Candidate)
			e.emit(Event{Type: ElectionFailed, State: Candidate, Err: err})
			e.wait(ctx, e.retryWait(), &hint)
			continue
		case ok && term <= lastTerm:
			// Our previous holding is still on the backend (its loss was not confirmed there). A new
			// leadership needs a new term: give the old one up and contend again.
			if reissued || !e.release(term) {
				if reissued {
					e.log.Warn("election backend granted a term not above the previous one", "term", term, "previous", lastTerm)
				}
				reissued = false
				e.wait(ctx, e.retryWait(), &hint)
				continue
			}
			reissued = true
			continue
		case ok && (e.stopping() || ctx.Err() != nil):
			if ctx.Err() == nil {
				e.release(term)
			} else {
				e.abandon(leftover{term: term})
			}
			return
		case ok && !e.cfg.deadline(sent).After(e.cfg.Clock.Now().Add(e.cfg.OpTimeout)):
			e.log.Warn("election acquired too late to use; giving it up", "term", term)
			e.release(term)
			continue
		case ok:
			lastTerm, reissued = term, false
			if end := e.lead(ctx, sent, term); end != nil {
				return
			}
			// The leadership was lost: contend again at once. A holding Redis lost (a restart, an
			// older snapshot) is then found by this attempt, which arms the fresh-dataset guard within
			// a renewal interval and a call bound of the loss instead of a RetryInterval later; a link
			// that is down fails the attempt's probe, and the wait below a failed attempt applies.
			continue
		}
		// Not acquired: see who leads, and until when.
		asked := e.cfg.Clock.Now()
		lctx, cancel := context.WithTimeout(ctx, e.cfg.OpTimeout)
		info, err := e.b.Leader(lctx, e.cfg.Role)
		cancel()
		if err == nil && info.ID == e.cfg.InstanceID && info.Term != 0 && !justUndid && e.releasesAbandoned() {
			// The backend holds a term of this instance that nothing here acts on: an acquire whose
			// reply was lost landed after the attempt was given up, or a renewal that timed out landed
			// after the release that followed the loss failed. Nobody else is granted the role until it
			// expires, and this elector is refused too (a new attempt is not given an earlier holding),
			// so release it and contend again at once instead of leaving the fleet a TTL to wait.
			e.log.Warn("election backend holds a term of this instance that it does not lead; releasing it", "term", info.Term)
			if e.release(info.Term) {
				undid = true
				continue
			}
		}
		if err == nil && info.ID != "" && info.ID != e.cfg.InstanceID {
			e.observe(info.ID)
			e.setState(Follower)
		} else {
			e.setState(Candidate)
			if err == nil && info.ID == "" {
				e.noteGuard(asked, info.Guard)
			}
		}
		var d time.Duration
		d, quick = e.nextAttempt(asked, info, err, quick)
		if d == e.cfg.RetryInterval {
			d = e.retryWait()
		}
		e.wait(ctx, d, &hint)
	}
}

// retryWait is RetryInterval jittered down by up to a tenth (drawn from Rand, run loop only), so that
// candidates refused together, and the leader's renewals, do not stay in phase: a standby whose
// attempts keep the leader's rhythm would always reach a restarted server after the leader.
func (e *Elector) retryWait() time.Duration {
	return e.cfg.RetryInterval - time.Duration(e.cfg.Rand.Int64N(int64(e.cfg.RetryInterval/10)+1))
}

// takeoverSlack is how long after the moment the backend said the role may be granted the next attempt
// is sent: enough for the backend's clock to be past it when the attempt arrives (a loopback round trip
// and a timer's scheduling), small against any TTL.
const takeoverSlack = 2 * time.Millisecond

// nextAttempt returns how long a candidate refused by TryAcquire waits before its next attempt, given
// what Leader, asked at asked, answered. A holding that ends, or a fresh-dataset guard that ends, before
// RetryInterval is waited out exactly: the attempt goes out takeoverSlack after the end, read from the
// backend as a duration and counted from before the question was sent, so it errs early, and an early
// attempt is refused and reads a shorter wait. A crashed leader's holding therefore passes to a standby
// within about TTL of the crash (its last renewal came before it), not TTL + RetryInterval. When the
// backend reports nobody and no guard (the holding ended between the two calls, or a PostgreSQL lock
// outlives its row), one attempt follows at once, then RetryInterval as before: quick says whether the
// previous wait was such an immediate retry, and the second result is the new value. The schedule only
// decides when the ordinary acquire is sent; it grants nothing.
func (e *Elector) nextAttempt(asked time.Time, info LeaderInfo, err error, quick bool) (time.Duration, bool) {
	var left time.Duration
	switch {
	case err != nil:
		return e.cfg.RetryInterval, false
	case info.ID != "" && info.TTL > 0:
		left = info.TTL
	case info.ID == "" && info.Guard > 0:
		left = info.Guard
	case info.ID == "" && !quick:
		return takeoverSlack, true
	default:
		return e.cfg.RetryInterval, false
	}
	d := asked.Add(left + takeoverSlack).Sub(e.cfg.Clock.Now())
	return min(max(d, takeoverSlack), e.cfg.RetryInterval), false
}

// release gives term up, bounded by OpTimeout, logs the outcome and reports whether it succeeded.
func (e *Elector) release(term uint64) bool {
	return e.releaseWithin(context.Background(), term) == nil
}

// releaseWithin is release bounded by ctx as well, returning the backend's error.
func (e *Elector) releaseWithin(ctx context.Context, term uint64) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.OpTimeout)
	defer cancel()
	err := e.b.Release(ctx, e.cfg.Role, e.cfg.InstanceID, term)
	switch {
	case errors.Is(err, ErrNotHeld):
		e.log.Info("election release found nothing to release", "term", term, "err", err)
	case err != nil:
		e.log.Warn("election release failed", "term", term, "err", err)
	default:
		e.log.Info("election released", "term", term)
	}
	return err
}

// lead holds the leadership with term until it ends. It returns a non-nil error when the elector must
// stop (graceful stop or crash) and nil when the leadership was lost and contending goes on.
func (e *Elector) lead(ctx context.Context, sent time.Time, term uint64) error {
	lctx, cancel := context.WithCancelCause(ctx)
	l := &leadership{ctx: lctx, cancel: cancel, term: term, since: e.cfg.Clock.Now(), idle: make(chan struct{})}
	k := startKeeper(lctx, e.b, &e.cfg, term, sent, cancel)
	l.keeper = k

	e.mu.Lock()
	prevLeader := e.leader
	e.cur, e.term = l, term
	e.setStateLocked(Leader)
	e.mu.Unlock()
	e.observe(e.cfg.InstanceID)
	e.m.isLeader.Set(1)
	e.m.elections.Inc()
	if prevLeader != "" && prevLeader != e.cfg.InstanceID {
		e.m.failovers.Inc()
	}
	e.log.Info("election acquired", "term", term, "previous", prevLeader)
	e.emit(Event{Type: Acquired, State: Leader, Term: term})
	if e.cfg.OnStartedLeading != nil && l.enter() {
		go func() {
			defer l.exit()
			e.cfg.OnStartedLeading(lctx, term)
		}()
	}

	var why, ret error
	switch {
	case waitAny(k.lost, ctx.Done(), e.stopCh) == 0:
		why = k.err
		k.stop()
		e.log.Warn("election lost", "term", term, "reason", why)
	case ctx.Err() != nil:
		why, ret = ErrCrashed, ErrCrashed
		k.stop()
		e.abandon(leftover{l: l, term: term})
		e.log.Info("election context ended while leading: stopped acting; Stop releases the role, without Stop it expires", "term", term)
	default:
		why, ret = ErrStopped, ErrStopped
		cancel(ErrStopped)
		e.drain(l)
		k.stop()
	}
	cancel(why)
	l.close()

	// Stop believing before anything else can happen: in particular before a release lets a standby in.
	e.mu.Lock()
	e.cur = nil
	if e.leader == e.cfg.InstanceID {
		e.leader = ""
	}
	e.setStateLocked(Candidate)
	e.mu.Unlock()
	e.m.isLeader.Set(0)
	e.m.tenure.Observe(e.cfg.Clock.Now().Sub(l.since).Seconds())
	if !errors.Is(why, ErrCrashed) {
		// Graceful stop: hand off. Involuntary loss: the holding may still be on the backend (a renewal
		// that timed out may have taken effect), and a new attempt of this elector is not given it back;
		// releasing it, now that nothing here acts on it, spares every candidate the wait for its expiry.
		e.release(term)
	}
	e.emit(Event{Type: Lost, State: Candidate, Term: term, Err: why})
	if e.cfg.OnStoppedLeading != nil {
		e.cfg.OnStoppedLeading()
	}
	return ret
}

// drain waits for the leadership's in-flight work, at most HandoffTimeout on the elector's clock.
func (e *Elector) drain(l *leadership) {
	l.close()
	if !clock.Sleep(e.cfg.Clock, e.cfg.HandoffTimeout, l.idle) {
		return
	}
	l.mu.Lock()
	n := l.n
	l.mu.Unlock()
	e.log.Warn("election handoff timeout: releasing with work still in flight", "in_flight", n)
}

// current returns the leadership in progress and counts one unit of work against it, or nil.
func (e *Elector) current() *leadership {
	e.mu.Lock()
	l := e.cur
	e.mu.Unlock()
	if l == nil || !l.keeper.valid(e.cfg.Clock.Now()) || !l.enter() {
		return nil
	}
	return l
}

func (l *leadership) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing || l.ctx.Err() != nil {
		return false
	}
	l.n++
	return true
}

func (l *leadership) exit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.closing && l.n == 0 {
		close(l.idle)
	}
}

func (l *leadership) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return
	}
	l.closing = true
	if l.n == 0 {
		close(l.idle)
	}
}

// waitAny blocks until one of the channels is ready and returns its index.
func waitAny(a, b, c <-chan struct{}) int {
	select {
	case <-a:
		return 0
	case <-b:
		return 1
	case <-c:
		return 2
	}
}
