package deploy

import "github.com/tenurelabs/tenure/internal/redisserver"

// external is a Redis at a user's address: the harness reaches it and never hurts it, and since it
// may hold data of others, a run keeps to keys of its own there (About.Shared).
type external struct {
	single
	uncontrolled
}

var _ Deployment = (*external)(nil)

func openExternal(addr string) Deployment {
	return &external{single: newSingle(addr), uncontrolled: uncontrolled{"an external Redis is not the harness's to kill, restart or pause"}}
}

// About implements Deployment.
func (b *external) About() About {
	return About{Describe: "external Redis at " + b.addr, Topology: TopologySingle, Persistence: redisserver.PersistNone, Shared: true}
}

// Close implements Deployment: the Redis is left as it is.
func (b *external) Close() error {
	b.closeAdmin()
	return nil
}
