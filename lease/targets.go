package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// TargetSource lists the endpoints that should be polled now. The manager calls it once per discovery
// round; an error keeps the previous list. Implementations must be safe for concurrent use.
type TargetSource interface {
	Targets(ctx context.Context) ([]string, error)
}

// StaticTargets is a fixed list of endpoints.
type StaticTargets []string

// Targets returns a copy of the list.
func (s StaticTargets) Targets(context.Context) ([]string, error) {
	return append([]string(nil), s...), nil
}

// SessionSource reads poll targets from session keys in Redis: <Prefix><id> holding JSON such as
// {"id":"abc","paused":false}. The endpoint ID is the key without the prefix. Paused sessions are left
// out. A session whose value is not a JSON object, whose "id" differs from the key, or which is not a
// string key is malformed: it is logged once (again only if its value changes) and skipped. The source
// only reads: it never writes, expires or deletes a session key.
type SessionSource struct {
	// Client reads the sessions.
	Client redis.UniversalClient
	// Prefix of session keys; "session:" when empty.
	Prefix string
	// Logger receives one warning per malformed session value; slog.Default() when nil.
	Logger *slog.Logger

	mu       sync.Mutex
	reported map[string]string // key -> malformed value already logged
}

type sessionValue struct {
	ID     string `json:"id"`
	Paused bool   `json:"paused"`
}

// Targets scans the session keys and returns the IDs of the sessions that are not paused.
func (s *SessionSource) Targets(ctx context.Context) ([]string, error) {
	prefix := s.Prefix
	if prefix == "" {
		prefix = "session:"
	}
	keyList, err := scanKeys(ctx, s.Client, escapeGlob(prefix)+"*")
	if err != nil {
		return nil, fmt.Errorf("lease: scan sessions: %w", err)
	}
	keyList = dedupe(keyList) // SCAN may return a key more than once
	if len(keyList) == 0 {
		return nil, nil
	}
	// Pipelined GETs rather than MGET: on Redis Cluster the keys live in many slots.
	p := s.Client.Pipeline()
	cmds := make([]*redis.StringCmd, len(keyList))
	for i, k := range keyList {
		cmds[i] = p.Get(ctx, k)
	}
	_, _ = p.Exec(ctx)
	var out []string
	for i, k := range keyList {
		id := strings.TrimPrefix(k, prefix)
		raw, err := cmds[i].Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue // removed between SCAN and GET
		case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
			s.malformed(k, "<"+err.Error()+">", "not a string key")
			continue
		case err != nil:
			return nil, fmt.Errorf("lease: read session %s: %w", k, err)
		}
		var v sessionValue
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			s.malformed(k, raw, err.Error())
			continue
		}
		if v.ID != "" && v.ID != id {
			s.malformed(k, raw, fmt.Sprintf("id %q does not match the key", v.ID))
			continue
		}
		s.wellFormed(k)
		if !v.Paused {
			out = append(out, id)
		}
	}
	return out, nil
}

func (s *SessionSource) malformed(key, raw, why string) {
	s.mu.Lock()
	if s.reported == nil {
		s.reported = make(map[string]string)
	}
	prev, seen := s.reported[key]
	s.reported[key] = raw
	s.mu.Unlock()
	if seen && prev == raw {
		return
	}
	lg := s.Logger
	if lg == nil {
		lg = slog.Default()
	}
	if len(raw) > 200 {
		raw = raw[:200] + "..."
	}
	lg.Warn("lease: malformed session skipped", "key", key, "reason", why, "value", raw)
}

func (s *SessionSource) wellFormed(key string) {
	s.mu.Lock()
	delete(s.reported, key)
	s.mu.Unlock()
}

// scanKeys returns every key matching pattern, on every master when client is a cluster client.
func scanKeys(ctx context.Context, client redis.UniversalClient, pattern string) ([]string, error) {
	scanOne := func(ctx context.Context, c redis.Cmdable) ([]string, error) {
		var out []string
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			out = append(out, it.Val())
		}
		return out, it.Err()
	}
	cc, ok := client.(*redis.ClusterClient)
	if !ok {
		return scanOne(ctx, client)
	}
	var mu sync.Mutex
	var all []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		ks, err := scanOne(ctx, c)
		mu.Lock()
		all = append(all, ks...)
		mu.Unlock()
		return err
	})
	return all, err
}
