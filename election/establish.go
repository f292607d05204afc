package election

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fresh-dataset guard as a newcomer meets it: on a new Redis the first election of a role waits one
// TTL, by design. The elector says so once, with the moment it ends and why, so that the wait does not
// look like a hang; MarkEstablished skips it where no leader from an earlier dataset can exist.

var (
	//go:embed scripts/establish.lua
	establishLua    string
	establishScript = redis.NewScript(establishLua)
)

// MarkEstablished creates role's epoch key if it is absent, bound to the server's current run, so that
// the fresh-dataset guard does not hold back the role's first election. Call it only where no leader of
// role from an earlier dataset can still be running: a first deployment, a test, a Redis that has never
// held the role. After a restart of a Redis the role was held on, it would let a new leader in while the
// old one may still act; the guard is for that case. It never lifts a guard already in force.
func (b *RedisBackend) MarkEstablished(ctx context.Context, role string) error {
	if err := establishScript.Run(ctx, b.c, []string{b.key(role, "epoch")}, b.keep.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("election: redis mark role %q established: %w", role, err)
	}
	return nil
}

// noteGuard logs, once per guard, that the backend grants the role to nobody for guard from asked
// (LeaderInfo.Guard), and why. Called by the run loop only.
func (e *Elector) noteGuard(asked time.Time, guard time.Duration) {
	now := e.cfg.Clock.Now()
	if guard <= 0 || now.Before(e.guardLogged) {
		return
	}
	e.guardLogged = asked.Add(guard)
	e.log.Info("election fresh dataset: nobody leads until "+e.guardLogged.Format("15:04:05.000"),
		"until", e.guardLogged, "reason", "a new or restarted Redis grants a role to nobody for one TTL, "+
			"so that a leader from before it stops first (RedisBackend.MarkEstablished skips this where no such leader can exist)")
}
