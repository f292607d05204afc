package deploy

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// singleName is the name of the node of every one-node deployment.
const singleName = "redis-0"

// single is what every one-node deployment shares: its one node, clients of it, and the verbs that
// need several nodes, which it refuses.
type single struct {
	addr  string
	admin *redis.Client
}

func newSingle(addr string) single {
	return single{addr: addr, admin: redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 3, ContextTimeoutEnabled: true})}
}

// Nodes implements Deployment: one node, known by its own address.
func (s *single) Nodes() []Node {
	return []Node{{Name: singleName, Announced: s.addr, Listen: s.addr}}
}

// NewClient implements Deployment.
func (s *single) NewClient(o ClientOptions, dial Dialer) redis.UniversalClient {
	return NodeClient(s.Nodes()[0], o, dial)
}

// Admin implements Deployment.
func (s *single) Admin() redis.UniversalClient { return s.admin }

// Watch implements Deployment: one node is never promoted.
func (s *single) Watch(context.Context, func(Promotion)) func() { return func() {} }

// Primary implements Deployment: the one node serves every key.
func (s *single) Primary(context.Context, string) (Serving, error) {
	return Serving{Node: singleName}, nil
}

// check refuses a node name that is not the one node's.
func (s *single) check(name string) error {
	if name != singleName {
		return noNode(name, s.Nodes())
	}
	return nil
}

// Promote implements Deployment: refused.
func (s *single) Promote(context.Context) error {
	return refuse("one Redis node has no replica to promote; use --redis sentinel")
}

// Migrate implements Deployment: refused.
func (s *single) Migrate(context.Context, string, time.Duration) (Migration, error) {
	return Migration{}, refuse("one Redis node has no hash slots to move; use --redis cluster")
}

// PeerLink implements Deployment: refused.
func (s *single) PeerLink(string) (Link, error) {
	return nil, refuse("one Redis node has no peers to cut it off from; use --redis sentinel, cluster or independent")
}

// closeAdmin closes the harness's client; a second close is no error.
func (s *single) closeAdmin() { _ = s.admin.Close() }

// uncontrolled is the process control of a Redis the harness does not run: every verb that would act
// on its process is refused, saying why.
type uncontrolled struct{ why string }

func (u uncontrolled) err() error { return refuse("%s; use --redis server", u.why) }

// Kill, Pause, StartKilled, Save and Reload implement Deployment: refused.
func (u uncontrolled) Kill(context.Context, string) error                  { return u.err() }
func (u uncontrolled) Pause(context.Context, string) (func() error, error) { return nil, u.err() }
func (u uncontrolled) StartKilled(context.Context) ([]Rejoined, error)     { return nil, u.err() }
func (u uncontrolled) Save(context.Context) error                          { return u.err() }
func (u uncontrolled) Reload(context.Context) error                        { return u.err() }
