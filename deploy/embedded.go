package deploy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// embedded is miniredis in this process. miniredis expires keys only when told time has passed, so a
// goroutine advances its clock in real time.
type embedded struct {
	single
	m    *miniredis.Miniredis
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex
	killed    bool
	closeOnce sync.Once
}

var _ Deployment = (*embedded)(nil)

func openEmbedded() (Deployment, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("deploy: start embedded redis: %w", err)
	}
	b := &embedded{single: newSingle(m.Addr()), m: m, stop: make(chan struct{}), done: make(chan struct{})}
	go b.tick()
	return b, nil
}

func (b *embedded) tick() {
	defer close(b.done)
	last := time.Now()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case now := <-t.C:
			b.m.SetTime(now)
			b.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// About implements Deployment.
func (b *embedded) About() About {
	return About{Describe: "miniredis (embedded, " + b.addr + ")", Topology: TopologySingle, Persistence: redisserver.PersistNone}
}

// Kill implements Deployment: miniredis stops answering and drops its data.
func (b *embedded) Kill(_ context.Context, name string) error {
	if err := b.check(name); err != nil {
		return err
	}
	b.kill()
	return nil
}

func (b *embedded) kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.killed {
		b.m.Close()
		b.killed = true
	}
}

// StartKilled implements Deployment: a killed miniredis answers again on its address, empty.
func (b *embedded) StartKilled(context.Context) ([]Rejoined, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.killed {
		return nil, nil
	}
	b.m.FlushAll()
	if err := b.m.Restart(); err != nil {
		return nil, fmt.Errorf("deploy: restart embedded redis: %w", err)
	}
	b.killed = false
	return []Rejoined{{Node: singleName, Role: "primary"}}, nil
}

// Pause implements Deployment: refused.
func (b *embedded) Pause(context.Context, string) (func() error, error) {
	return nil, refuse("the embedded Redis (miniredis) cannot be paused; use --redis server")
}

// Save implements Deployment: refused.
func (b *embedded) Save(context.Context) error { return b.noFiles() }

// Reload implements Deployment: refused.
func (b *embedded) Reload(context.Context) error { return b.noFiles() }

func (b *embedded) noFiles() error {
	return refuse("the embedded Redis (miniredis) keeps no files; use --redis server:rdb or server:aof")
}

// Close implements Deployment.
func (b *embedded) Close() error {
	b.closeOnce.Do(func() {
		close(b.stop)
		<-b.done
		b.closeAdmin()
		b.kill()
	})
	return nil
}
