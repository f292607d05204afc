package chaos

import (
	"context"
	"strconv"
)

// ConnReset drops every open connection of the instance in Slot (or of the holder of Of) at once and
// lets it reconnect, leaving any other fault on the link in force: what a load balancer, a NAT table
// flush or a server-side kill does to a session.
// For a PostgreSQL advisory lock it means the session, and the lock with it, is gone.
type ConnReset struct {
	Slot int    `json:"slot"`
	Of   string `json:"of,omitempty"`
}

// Name implements Fault.
func (ConnReset) Name() string { return "conn-reset" }

// Apply implements Fault.
func (f ConnReset) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, l, err := targetLink(env, f.Slot, f.Of)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Params: map[string]string{"slot": strconv.Itoa(f.Slot)}}
	return nil, a, l.Reset()
}
