package election

import (
	"context"
	"errors"
	"fmt"
)

// RunOnce runs fn if leadership of cfg.Role can be had now, and releases it afterwards. ran reports
// whether fn ran; err joins fn's error, ErrLeadershipLost (when leadership ended while fn ran) and a failed
// release. fn's context is cancelled before the local lease deadline, as a leader context is; fn gets the
// term to fence its writes with. When the role is held elsewhere RunOnce returns (false, nil).
//
// cfg.StartJitter and the callbacks (OnValidUntil included) are not used.
func RunOnce(ctx context.Context, b Backend, cfg Config, fn func(ctx context.Context, term uint64) error) (ran bool, err error) {
	if b == nil {
		return false, fmt.Errorf("%w: backend must not be nil", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	cfg = cfg.withDefaults()
	cfg.OnValidUntil = nil
	log := cfg.Logger.With("role", cfg.Role, "instance", cfg.InstanceID)

	sent := cfg.Clock.Now()
	actx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	term, ok, err := b.TryAcquire(actx, cfg.Role, cfg.InstanceID, cfg.TTL)
	cancel()
	if err != nil {
		return false, fmt.Errorf("election: run once, role %q: acquire: %w", cfg.Role, errors.Join(err, ctx.Err()))
	}
	if !ok {
		return false, nil
	}
	log.Info("election acquired for one run", "term", term)

	lctx, cancelLeader := context.WithCancelCause(ctx)
	k := startKeeper(lctx, b, &cfg, term, sent, cancelLeader)
	fnErr := fn(lctx, term)
	k.stop()
	cancelLeader(ErrStopped)

	var lost error
	select {
	case <-k.lost:
		lost = k.err
	default:
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.OpTimeout)
	relErr := b.Release(rctx, cfg.Role, cfg.InstanceID, term)
	cancel()
	if errors.Is(relErr, ErrNotHeld) {
		// Already gone. If fn outlived the leadership, lost says so; otherwise fn finished inside its
		// deadline and nothing is wrong.
		relErr = nil
	}
	if relErr != nil {
		relErr = fmt.Errorf("election: run once, role %q: release: %w", cfg.Role, relErr)
	}
	log.Info("election run finished", "term", term, "err", errors.Join(fnErr, lost, relErr))
	return true, errors.Join(fnErr, lost, relErr)
}

// LeaderOnly wraps fn so that it runs only while e leads: called when e does not lead, it returns
// ErrNotLeader without running fn. fn's context ends when the caller's does or when the leadership ends,
// whichever comes first, and fn counts as in-flight work that a graceful Stop waits for (up to
// HandoffTimeout) before releasing.
func LeaderOnly(e *Elector, fn func(ctx context.Context, term uint64) error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		l := e.current()
		if l == nil {
			return fmt.Errorf("%w (role %q, instance %q)", ErrNotLeader, e.cfg.Role, e.cfg.InstanceID)
		}
		defer l.exit()
		fctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(l.ctx, func() { cancel(context.Cause(l.ctx)) })
		defer stop()
		return fn(fctx, l.term)
	}
}
