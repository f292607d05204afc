package deploy

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Dialer opens a connection for a client to the node announced at addr.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// ClientOptions are the settings a deployment's client is built with; timeouts bound each call
// (ContextTimeoutEnabled is always on).
type ClientOptions struct {
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	PoolSize, MaxRetries                   int
}

// MapDialer returns a Dialer that connects to local[announced] in place of announced, and refuses an
// address it does not know: a client whose dialer it is never reaches a node but through the
// addresses it was given.
func MapDialer(local map[string]string, timeout time.Duration) Dialer {
	d := net.Dialer{Timeout: timeout}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		to, ok := local[addr]
		if !ok {
			known := make([]string, 0, len(local))
			for k := range local {
				known = append(known, k)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("deploy: no link to %s: not the announced address of a node (known: %s)", addr, strings.Join(known, ", "))
		}
		return d.DialContext(ctx, network, to)
	}
}

// NodeClient is a plain client of one node whose connections are opened by dial.
func NodeClient(n Node, o ClientOptions, dial Dialer) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:        n.Announced,
		Dialer:      dial,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: true,
		PoolSize:              o.PoolSize,
		MaxRetries:            o.MaxRetries,
	})
}

// lazyClient is a deployment's Admin client, made on first use (a client of a deployment of several
// nodes may talk to them in the background) and closed with the deployment.
type lazyClient struct {
	mu     sync.Mutex
	c      redis.UniversalClient
	closed bool
}

func (l *lazyClient) get(make func() redis.UniversalClient) redis.UniversalClient {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		l.c = make()
		if l.closed {
			_ = l.c.Close()
		}
	}
	return l.c
}

func (l *lazyClient) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.c == nil {
		return nil
	}
	return l.c.Close()
}
