package election

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/clock"
)

// keeper keeps one leadership alive: it renews every RenewInterval and ends the leadership at the local
// deadline unless a renewal has been confirmed, whatever the state of a pending request. A renewal that
// fails or times out ends it at once (fail closed). When the leadership ends, lost is closed, err says
// why, and the leader context is cancelled with err as its cause.
type keeper struct {
	b    Backend
	cfg  *Config
	term uint64

	ctx    context.Context         // the leader context
	cancel context.CancelCauseFunc // cancels the leader context
	quit   chan struct{}           // closed by stop
	done   chan struct{}           // closed when run returns
	lost   chan struct{}           // closed when the leadership ended involuntarily
	err    error                   // why; set before lost is closed

	rng *rand.Rand // the renewal jitter, drawn from Config.Rand when the keeper starts (its goroutine only)

	mu    sync.Mutex
	until time.Time // the current local deadline
}

type renewal struct {
	sent time.Time
	err  error
}

// startKeeper starts keeping the leadership with term, acquired by a request sent at sent.
func startKeeper(ctx context.Context, b Backend, cfg *Config, term uint64, sent time.Time, cancel context.CancelCauseFunc) *keeper {
	k := &keeper{
		b: b, cfg: cfg, term: term, ctx: ctx, cancel: cancel,
		quit: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{}),
		rng: rand.New(rand.NewPCG(cfg.Rand.Uint64(), cfg.Rand.Uint64())),
	}
	k.until = cfg.deadline(sent)
	if cfg.OnValidUntil != nil {
		cfg.OnValidUntil(term, k.until)
	}
	go k.run(sent)
	return k
}

// valid reports whether now is before the current local deadline.
func (k *keeper) valid(now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return now.Before(k.until)
}

// stop ends renewing (it releases nothing) and waits until the keeper has returned, which includes a
// renewal in flight.
func (k *keeper) stop() {
	select {
	case <-k.quit:
	default:
		close(k.quit)
	}
	<-k.done
}

// deadlineTimer returns a timer firing at the local deadline of a holding confirmed at sent.
func (k *keeper) deadlineTimer(sent time.Time) clock.Timer {
	return k.cfg.Clock.NewTimer(k.cfg.deadline(sent).Sub(k.cfg.Clock.Now()))
}

func (k *keeper) run(sent time.Time) {
	defer close(k.done)
	ctx, cancelCalls := context.WithCancel(context.Background())
	defer cancelCalls()

	c := k.cfg.Clock
	deadline := k.deadlineTimer(sent)
	defer func() { deadline.Stop() }()
	next := c.NewTimer(k.renewEvery() - c.Now().Sub(sent))
	defer func() { next.Stop() }()
	results := make(chan renewal, 1)
	pending := false

	for {
		select {
		case <-k.quit:
			if pending {
				// Let the renewal finish rather than cut it: on PostgreSQL a cancelled query ends the
				// session, and a release may follow on that session. A backend that ignores its
				// context is not waited for beyond OpTimeout.
				clock.Sleep(c, k.cfg.OpTimeout, chanOf(results))
			}
			return
		case <-deadline.C():
			if !k.cancelsAtDeadline() {
				continue
			}
			k.end(fmt.Errorf("%w: %w (role %q, term %d)", ErrLeadershipLost, ErrDeadline, k.cfg.Role, k.term))
			return
		case <-next.C():
			if pending {
				// The previous renewal has not answered; the deadline timer decides.
				next = c.NewTimer(k.renewEvery())
				continue
			}
			pending = true
			sent := c.Now()
			go func() {
				octx, cancel := context.WithTimeout(ctx, k.cfg.OpTimeout)
				defer cancel()
				err := k.b.Renew(octx, k.cfg.Role, k.cfg.InstanceID, k.renewedTerm(octx), k.cfg.TTL)
				results <- renewal{sent: sent, err: err}
			}()
		case r := <-results:
			pending = false
			if r.err != nil {
				k.end(fmt.Errorf("%w: renewal failed (role %q, term %d): %w", ErrLeadershipLost, k.cfg.Role, k.term, r.err))
				return
			}
			if !k.cfg.deadline(r.sent).After(c.Now()) && k.cancelsAtDeadline() {
				k.end(fmt.Errorf("%w: %w: renewal confirmed too late (role %q, term %d)", ErrLeadershipLost, ErrDeadline, k.cfg.Role, k.term))
				return
			}
			k.mu.Lock()
			k.until = k.cfg.deadline(r.sent)
			until := k.until
			k.mu.Unlock()
			if k.cfg.OnValidUntil != nil && k.ctx.Err() == nil {
				k.cfg.OnValidUntil(k.term, until)
			}
			deadline.Stop()
			deadline = k.deadlineTimer(r.sent)
			next.Stop()
			next = c.NewTimer(k.renewEvery() - c.Now().Sub(r.sent))
			k.cfg.Logger.Debug("election renewed", "role", k.cfg.Role, "instance", k.cfg.InstanceID, "term", k.term)
		}
	}
}

// renewEvery is RenewInterval jittered down by up to a tenth: renewing early is always safe, and the
// leaders of several roles, and the candidates' retries, do not stay in phase.
func (k *keeper) renewEvery() time.Duration {
	return k.cfg.RenewInterval - time.Duration(k.rng.Int64N(int64(k.cfg.RenewInterval/10)+1))
}

func (k *keeper) end(err error) {
	k.err = err
	k.cancel(err)
	close(k.lost)
}

// chanOf turns "a renewal result arrived" into a channel that closes; it does not consume the result
// for anyone else (nobody else reads results).
func chanOf(results <-chan renewal) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		<-results
		close(done)
	}()
	return done
}
