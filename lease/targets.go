package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/clock"
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
// only reads: it never writes, expires or deletes a session key, nor the change counter.
//
// # Incremental reads: the change counter
//
// Reading every session (SCAN, then one GET per session) on every discovery round costs each instance
// as many commands as there are sessions. The application that owns the sessions can spare that by
// keeping a change counter, the integer key VersionKey (default SessionVersionKey(Prefix), e.g.
// "session-version"): after every change to a session — created, paused, resumed, deleted, rewritten
// after data loss — it increments the counter, change first, counter second:
//
//	SET session:abc '{"id":"abc","paused":true}'
//	INCR session-version
//
// (a MULTI/EXEC or a script around both is as good). Each call of Targets then reads the counter and
// the server's run_id in one command (a read-only script on the counter's node) and reads every
// session only when that pair differs from the pair read just before its last full read, or when
// ResyncInterval has passed since that full read. The counter is read before the sessions, so a change
// whose increment lands during a full read is read again at the next call.
//
// What this covers:
//
//   - A Redis restart, empty or from an older snapshot or log: the counter may come back at a value
//     seen before, but the server's run_id is new at every start, so the pair differs and every session
//     is read again. The FLUSHALL of a running server removes the counter: see the next point.
//   - No counter (an application that does not keep one, or a counter lost with its data): while the
//     key is absent every call reads every session, as if there were no counter. An application that
//     never increments loses nothing but the saving.
//   - A writer that changes a session and forgets to increment: the change is seen at the first call
//     after the next increment by anyone, and at the latest at the first call after ResyncInterval has
//     passed since the last full read, i.e. within ResyncInterval plus one discovery interval.
//   - A server whose scripts cannot read INFO (e.g. miniredis) gives an empty run_id: a restart is then
//     noticed only through the counter's value (absent, or different), and otherwise at the resync.
//   - Redis Cluster: the counter is one key, read on the node that holds it, together with that node's
//     run_id. A restart of another node that loses sessions is seen at the next increment or resync.
//
// The session list only decides which endpoints are polled; no lease guarantee depends on it.
type SessionSource struct {
	// Client reads the sessions.
	Client redis.UniversalClient
	// Prefix of session keys; "session:" when empty.
	Prefix string
	// VersionKey is the change counter (see above); SessionVersionKey(Prefix) when empty. A key under
	// Prefix is never taken for a session.
	VersionKey string
	// ResyncInterval is how often every session is read even though the counter has not moved;
	// DefaultSessionResync when zero. It must not be negative.
	ResyncInterval time.Duration
	// Clock times the resync; clock.Real{} when nil.
	Clock clock.Clock
	// Logger receives one warning per malformed session value; slog.Default() when nil.
	Logger *slog.Logger

	mu       sync.Mutex
	reported map[string]string // key -> malformed value already logged
	synced   bool              // list reflects every change up to version
	version  string            // counter value and run_id read before the last full read
	syncedAt time.Time         // when that full read began (on Clock)
	list     []string          // the targets of the last full read, sorted
	full     int64             // full reads so far
	warned   bool              // the counter read was refused once: logged
}

// DefaultSessionResync is SessionSource's default ResyncInterval and Config's default SessionResync.
const DefaultSessionResync = 5 * time.Minute

// SessionVersionKey is the default change counter for session keys under prefix ("session:" when
// empty): the prefix without its trailing colon, followed by "-version" ("session-version").
func SessionVersionKey(prefix string) string {
	if prefix == "" {
		prefix = "session:"
	}
	return strings.TrimSuffix(prefix, ":") + "-version"
}

type sessionValue struct {
	ID     string `json:"id"`
	Paused bool   `json:"paused"`
}

func (s *SessionSource) prefix() string {
	if s.Prefix == "" {
		return "session:"
	}
	return s.Prefix
}

func (s *SessionSource) versionKey() string {
	if s.VersionKey == "" {
		return SessionVersionKey(s.Prefix)
	}
	return s.VersionKey
}

func (s *SessionSource) validate() error {
	if s.ResyncInterval < 0 {
		return fmt.Errorf("%w: SessionSource.ResyncInterval (%s) must not be negative (zero means %s)",
			ErrInvalidConfig, s.ResyncInterval, DefaultSessionResync)
	}
	if s.Client == nil {
		return fmt.Errorf("%w: SessionSource.Client must not be nil", ErrInvalidConfig)
	}
	return nil
}

// Targets returns the IDs of the sessions that are not paused, sorted. It reads every session only when
// the change counter or the server moved, or a resync is due (see the type's doc).
func (s *SessionSource) Targets(ctx context.Context) ([]string, error) {
	list, err := s.shared(ctx)
	return slices.Clone(list), err
}

// shared is Targets without the copy: the list is the source's own, shared by every call until the
// next full read, and must not be modified. The manager reads it on every discovery round; copying
// 10,000 IDs each time was a measurable part of a large fleet's CPU and garbage.
func (s *SessionSource) shared(ctx context.Context) ([]string, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	clk := s.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	resync := s.ResyncInterval
	if resync == 0 {
		resync = DefaultSessionResync
	}
	version, known, err := s.readVersion(ctx)
	if err != nil {
		return nil, err
	}
	now := clk.Now()
	s.mu.Lock()
	if known && s.synced && version == s.version && now.Sub(s.syncedAt) < resync {
		out := s.list
		s.mu.Unlock()
		return out, nil
	}
	s.mu.Unlock()

	list, err := s.readAll(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.synced, s.version, s.syncedAt, s.list = known, version, now, list
	s.full++
	s.mu.Unlock()
	return list, nil
}

// readVersion reads the change counter and the server's run_id. known is false when there is no
// counter to rely on (the key is absent, or the server refuses the script): every session must be read.
func (s *SessionSource) readVersion(ctx context.Context) (version string, known bool, err error) {
	key := s.versionKey()
	res, err := sessionsVersionScript.Run(ctx, s.Client, []string{key}).Slice()
	var reply redis.Error
	switch {
	case err != nil && errors.As(err, &reply) && !errors.Is(err, redis.Nil):
		// A reply, not a lost call: a server without scripting, or a counter that is not a string.
		// Read every session, as without a counter.
		s.mu.Lock()
		warn := !s.warned
		s.warned = true
		s.mu.Unlock()
		if warn {
			s.logger().Warn("lease: session change counter unreadable: discovery reads every session while it is",
				"key", key, "err", err)
		}
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("lease: read session change counter %s: %w", key, err)
	}
	if len(res) != 2 || res[0] == nil {
		return "", false, nil
	}
	return fmt.Sprint(res[0]) + "@" + fmt.Sprint(res[1]), true, nil
}

func (s *SessionSource) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// readAll scans the session keys and returns the sorted IDs of the sessions that are not paused.
func (s *SessionSource) readAll(ctx context.Context) ([]string, error) {
	prefix := s.prefix()
	keyList, err := scanKeys(ctx, s.Client, escapeGlob(prefix)+"*")
	if err != nil {
		return nil, fmt.Errorf("lease: scan sessions: %w", err)
	}
	keyList = dedupe(keyList) // SCAN may return a key more than once
	if vk := s.versionKey(); strings.HasPrefix(vk, prefix) {
		if i, ok := slices.BinarySearch(keyList, vk); ok {
			keyList = slices.Delete(keyList, i, i+1)
		}
	}
	if len(keyList) == 0 {
		return nil, nil
	}
	values, err := s.readValues(ctx, keyList)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, k := range keyList {
		id := strings.TrimPrefix(k, prefix)
		raw, err := values[i].raw, values[i].err
		switch {
		case errors.Is(err, redis.Nil):
			continue // removed between SCAN and GET
		case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
			s.malformed(k, "<"+err.Error()+">", "not a string key")
			continue
		case err != nil:
			return nil, fmt.Errorf("lease: read session %s: %w", k, err)
		}
		// The form applications usually write, compared as text: parsing JSON for each of many
		// thousands of sessions on every full read costs more than the read.
		if paused, ok := canonicalSession(raw, id); ok {
			s.wellFormed(k)
			if !paused {
				out = append(out, id)
			}
			continue
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
	return out, nil // sorted: keyList is, and the prefix is common
}

// canonicalSession recognises the two values {"id":"<id>","paused":false|true} exactly as encoding/json
// writes them for an id that needs no escaping; ok is false for anything else (parsed as JSON).
func canonicalSession(raw, id string) (paused, ok bool) {
	const head, tail = `{"id":"`, `","paused":`
	if !strings.HasPrefix(raw, head) || len(raw) < len(head)+len(id) || raw[len(head):len(head)+len(id)] != id {
		return false, false
	}
	for _, c := range []byte(id) {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			return false, false
		}
	}
	switch raw[len(head)+len(id):] {
	case tail + "false}":
		return false, true
	case tail + "true}":
		return true, true
	}
	return false, false
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
	lg := s.logger()
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

// sessionRead is one session key's value, or the error of its read (redis.Nil: the key is gone).
type sessionRead struct {
	raw string
	err error
}

// mgetBatch is how many session keys one MGET reads.
const mgetBatch = 500

// readValues reads the values of keys in one round trip: MGETs of mgetBatch keys each, pipelined; on
// Redis Cluster, where keys live in many slots, one GET per key. A key MGET finds no string value for
// (removed since the scan, or not a string key) is read again with GET, which tells the two apart.
func (s *SessionSource) readValues(ctx context.Context, keys []string) ([]sessionRead, error) {
	out := make([]sessionRead, len(keys))
	var again []int // indexes to read with GET
	if _, cluster := s.Client.(*redis.ClusterClient); cluster {
		again = make([]int, len(keys))
		for i := range keys {
			again[i] = i
		}
	} else {
		p := s.Client.Pipeline()
		var cmds []*redis.SliceCmd
		for i := 0; i < len(keys); i += mgetBatch {
			cmds = append(cmds, p.MGet(ctx, keys[i:min(i+mgetBatch, len(keys))]...))
		}
		_, _ = p.Exec(ctx)
		for b, c := range cmds {
			vals, err := c.Result()
			if err != nil {
				return nil, fmt.Errorf("lease: read sessions: %w", err)
			}
			for j, v := range vals {
				i := b*mgetBatch + j
				if str, ok := v.(string); ok {
					out[i].raw = str
				} else {
					again = append(again, i)
				}
			}
		}
	}
	if len(again) == 0 {
		return out, nil
	}
	p := s.Client.Pipeline()
	cmds := make([]*redis.StringCmd, len(again))
	for j, i := range again {
		cmds[j] = p.Get(ctx, keys[i])
	}
	_, _ = p.Exec(ctx)
	for j, i := range again {
		out[i].raw, out[i].err = cmds[j].Result()
	}
	return out, nil
}

// scanCount is the COUNT of each SCAN call: about how many keys of the whole keyspace one call walks.
// A scan for a few keys (heartbeats) among many (leases, fencing counters, sessions) walks them all,
// so the count sets how many sequential round trips a scan takes: three for 30,000 keys. Redis spends
// well under a millisecond per call on it.
const scanCount = 10000

// scanKeys returns every key matching pattern, on every master when client is a cluster client.
func scanKeys(ctx context.Context, client redis.UniversalClient, pattern string) ([]string, error) {
	scanOne := func(ctx context.Context, c redis.Cmdable) ([]string, error) {
		var out []string
		it := c.Scan(ctx, 0, pattern, scanCount).Iterator()
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
