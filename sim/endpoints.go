package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/lease"
)

// ErrStaleToken is returned by a fencing endpoint to a poll whose token is older than one it has seen.
var ErrStaleToken = errors.New("sim: poll refused: stale fencing token")

// StaleTokenError is the error a fencing endpoint refuses a poll with: it is ErrStaleToken, and carries
// the highest token the endpoint had seen.
type StaleTokenError struct {
	MaxToken uint64
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("%v (token %d seen)", ErrStaleToken, e.MaxToken)
}

// Is makes errors.Is(err, ErrStaleToken) hold.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

// endpointService is the simulated service whose endpoints the fleet polls. It stamps every poll that
// arrives with the harness clock and, when fencing is on, refuses a token lower than the highest it has
// seen for that endpoint.
type endpointService struct {
	rec      *history.Recorder
	fencing  bool
	duration time.Duration

	mu       sync.Mutex
	maxToken map[string]uint64
}

func newEndpointService(rec *history.Recorder, fencing bool, pollDuration time.Duration) *endpointService {
	return &endpointService{rec: rec, fencing: fencing, duration: pollDuration, maxToken: map[string]uint64{}}
}

// barrier returns once every poll that is arriving has been stamped: a caller that marks an instance
// dead and then passes the barrier knows that no poll from it arrives afterwards.
func (s *endpointService) barrier() {
	s.mu.Lock()
	s.mu.Unlock() //nolint:staticcheck // an empty critical section is the point
}

// Poll serves one poll. It takes the poll's duration unless ctx ends first. alive is checked as the
// poll arrives: a poll from an instance that is no longer alive never reaches the endpoint.
func (s *endpointService) Poll(ctx context.Context, instance, endpoint string, token uint64, alive func() bool) error {
	s.mu.Lock()
	if !alive() {
		s.mu.Unlock()
		return errDead
	}
	at := s.rec.Now()
	prev := s.maxToken[endpoint]
	refused := s.fencing && token < prev
	if !refused && token > prev {
		s.maxToken[endpoint] = token
	}
	s.mu.Unlock()

	ev := history.Event{Kind: history.KindPoll, At: at, Instance: instance, Endpoint: endpoint,
		Poll: &history.Poll{Token: token, MaxToken: prev}}
	if refused {
		ev.End = at
		ev.Poll.Outcome = history.PollRefused
		s.rec.Add(ev)
		return &StaleTokenError{MaxToken: prev}
	}
	t := time.NewTimer(s.duration)
	defer t.Stop()
	var err error
	select {
	case <-t.C:
		ev.Poll.Outcome = history.PollOK
	case <-ctx.Done():
		ev.Poll.Outcome = history.PollCancelled
		err = ctx.Err()
	}
	ev.End = s.rec.Now()
	s.rec.Add(ev)
	return err
}

// sessionStore is the poll targets: session:<id> keys holding {"id":..., "paused":...}. The harness
// plays the application that owns them; the system under test only reads them. Like such an
// application it increments the sessions' change counter (lease.SessionVersionKey of the prefix) after
// every change, in the same round trip, so that a system that reads the counter (the reference's
// lease.SessionSource) sees each change at its next discovery round.
type sessionStore struct {
	client  redis.UniversalClient
	prefix  string
	version string // the change counter key
	rec     *history.Recorder

	mu     sync.Mutex
	order  []string
	paused map[string]bool
}

func newSessionStore(client redis.UniversalClient, prefix string, rec *history.Recorder) *sessionStore {
	return &sessionStore{client: client, prefix: prefix, version: lease.SessionVersionKey(prefix), rec: rec, paused: map[string]bool{}}
}

type sessionDoc struct {
	ID     string `json:"id"`
	Paused bool   `json:"paused"`
}

// change applies one change to the session keys, then increments the change counter, in one pipeline
// (commands on one connection run in order: the counter moves only after the change). A cluster client
// sends a pipeline's commands to their shards at once, in no order across shards, so there the counter
// is incremented in a round trip of its own after the change.
func (s *sessionStore) change(ctx context.Context, what string, queue func(p redis.Pipeliner)) error {
	p := s.client.Pipeline()
	queue(p)
	if _, cluster := s.client.(*redis.ClusterClient); cluster {
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("sim: %s: %w", what, err)
		}
		p = s.client.Pipeline()
	}
	p.Incr(ctx, s.version)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("sim: %s: %w", what, err)
	}
	return nil
}

func (s *sessionStore) write(ctx context.Context, id string, paused bool) error {
	b, _ := json.Marshal(sessionDoc{ID: id, Paused: paused})
	return s.change(ctx, "write session "+id, func(p redis.Pipeliner) { p.Set(ctx, s.prefix+id, b, 0) })
}

func (s *sessionStore) note(id string, c history.SessionChange) {
	s.rec.Add(history.Event{Kind: history.KindSession, At: s.rec.Now(), Endpoint: id, Session: &history.Session{Change: c}})
}

func (s *sessionStore) Add(ctx context.Context, id string) error {
	// Redis first: the in-memory view (what Restore writes back) follows only what was written.
	if err := s.write(ctx, id, false); err != nil {
		return err
	}
	s.mu.Lock()
	if _, exists := s.paused[id]; !exists {
		s.order = append(s.order, id)
	}
	s.paused[id] = false
	s.mu.Unlock()
	s.note(id, history.SessionAdded)
	return nil
}

func (s *sessionStore) setPaused(ctx context.Context, id string, p bool) error {
	s.mu.Lock()
	_, ok := s.paused[id]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("sim: no session %q", id)
	}
	if err := s.write(ctx, id, p); err != nil {
		return err
	}
	s.mu.Lock()
	s.paused[id] = p
	s.mu.Unlock()
	return nil
}

func (s *sessionStore) Pause(ctx context.Context, id string) error {
	if err := s.setPaused(ctx, id, true); err != nil {
		return err
	}
	s.note(id, history.SessionPaused)
	return nil
}

func (s *sessionStore) Resume(ctx context.Context, id string) error {
	if err := s.setPaused(ctx, id, false); err != nil {
		return err
	}
	s.note(id, history.SessionResumed)
	return nil
}

func (s *sessionStore) Remove(ctx context.Context, id string) error {
	s.mu.Lock()
	_, ok := s.paused[id]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("sim: no session %q", id)
	}
	if err := s.change(ctx, "remove session "+id, func(p redis.Pipeliner) { p.Del(ctx, s.prefix+id) }); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.paused, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.note(id, history.SessionRemoved)
	return nil
}

// Restore writes every session again, after the backend lost its data.
func (s *sessionStore) Restore(ctx context.Context) error {
	s.mu.Lock()
	docs := make([]sessionDoc, 0, len(s.order))
	for _, id := range s.order {
		docs = append(docs, sessionDoc{ID: id, Paused: s.paused[id]})
	}
	s.mu.Unlock()
	// In batches, each followed by its increment.
	var errs []error
	for len(docs) > 0 {
		n := min(len(docs), 1000)
		batch := docs[:n]
		docs = docs[n:]
		errs = append(errs, s.change(ctx, "restore sessions", func(p redis.Pipeliner) {
			for _, d := range batch {
				b, _ := json.Marshal(d)
				p.Set(ctx, s.prefix+d.ID, b, 0)
			}
		}))
	}
	s.rec.Add(history.Event{Kind: history.KindNote, At: s.rec.Now(), Note: "sessions restored after data loss"})
	return errors.Join(errs...)
}

func (s *sessionStore) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// deleteAll removes every session the run wrote (used on shared backends at the end of a run).
func (s *sessionStore) deleteAll(ctx context.Context) error {
	ids := s.IDs()
	if len(ids) == 0 {
		return nil
	}
	keys := make([]string, len(ids), len(ids)+1)
	for i, id := range ids {
		keys[i] = s.prefix + id
	}
	keys = append(keys, s.version)
	return delKeys(ctx, s.client, keys)
}
