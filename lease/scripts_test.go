package lease

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// scriptEnv runs the lease scripts directly against miniredis, whose TIME follows SetTime.
type scriptEnv struct {
	t   *testing.T
	mr  *miniredis.Miniredis
	c   *redis.Client
	now time.Time
	k   keys
}

func newScriptEnv(t *testing.T) *scriptEnv {
	mr := miniredis.RunT(t)
	e := &scriptEnv{t: t, mr: mr, c: newClient(t, mr.Addr()), now: time.Unix(1_800_000_000, 0), k: keys{prefix: "poll:"}}
	mr.SetTime(e.now)
	return e
}

func (e *scriptEnv) advance(d time.Duration) {
	e.now = e.now.Add(d)
	e.mr.SetTime(e.now)
	e.mr.FastForward(d)
}

func (e *scriptEnv) run(s *redis.Script, ks []string, args ...any) int64 {
	e.t.Helper()
	v, err := s.Run(context.Background(), e.c, ks, args...).Int64()
	require.NoError(e.t, err)
	return v
}

func (e *scriptEnv) acquire(owner, ep string, ttl time.Duration) int64 {
	return e.run(acquireScript, []string{e.k.lease(ep), e.k.fence(ep), e.k.epoch("")}, owner, ttl.Milliseconds())
}

func (e *scriptEnv) renew(owner, ep string, ttl time.Duration) int64 {
	return e.run(renewScript, []string{e.k.lease(ep)}, owner, ttl.Milliseconds())
}

func (e *scriptEnv) release(owner, ep string) int64 {
	return e.run(releaseScript, []string{e.k.lease(ep)}, owner, 0, e.k.channel(), "release "+owner+" "+ep)
}

func TestScriptsAcquireRenewRelease(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	ttl := 3 * time.Second
	require.EqualValues(t, -1, e.acquire("a", "x", ttl), "fresh dataset: guard")
	require.EqualValues(t, -1, e.acquire("b", "x", ttl), "guard holds for one TTL")
	e.advance(ttl - time.Millisecond)
	require.EqualValues(t, -1, e.acquire("a", "x", ttl))
	e.advance(time.Millisecond)

	tok := e.acquire("a", "x", ttl)
	require.Equal(t, e.now.UnixMicro(), tok, "token = Redis TIME in microseconds")
	require.EqualValues(t, 0, e.acquire("b", "x", ttl), "held by a")
	require.Equal(t, tok, e.acquire("a", "x", ttl), "re-send by the holder: same token")
	v, _ := e.mr.Get("poll:lease:x")
	require.Equal(t, "a", v)

	require.EqualValues(t, 0, e.renew("b", "x", ttl))
	e.advance(2 * time.Second)
	require.EqualValues(t, 1, e.renew("a", "x", ttl))
	e.advance(2 * time.Second)
	require.True(t, e.mr.Exists("poll:lease:x"), "renew extended the TTL")

	require.EqualValues(t, 0, e.release("b", "x"))
	require.EqualValues(t, 1, e.release("a", "x"))
	require.EqualValues(t, 0, e.release("a", "x"), "second release is a no-op")
	require.False(t, e.mr.Exists("poll:lease:x"))

	tok2 := e.acquire("b", "x", ttl)
	require.Greater(t, tok2, tok)
	require.EqualValues(t, 0, e.renew("a", "x", ttl), "the old holder cannot renew the new one's lease")
}

func TestScriptsTokensIncreaseWithinOneMicrosecond(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	require.NoError(t, MarkEstablished(context.Background(), e.c, "poll:"))
	var last int64
	for i := 0; i < 5; i++ { // the clock does not move: tokens still increase
		tok := e.acquire("a", "x", time.Second)
		require.Greater(t, tok, last)
		last = tok
		require.EqualValues(t, 1, e.release("a", "x"))
	}
}

func TestScriptsTokensIncreaseAcrossWipe(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	ttl := time.Second
	require.NoError(t, MarkEstablished(context.Background(), e.c, "poll:"))
	before := e.acquire("a", "x", ttl)
	require.Positive(t, before)
	e.mr.FlushAll() // Redis restarted empty
	e.advance(10 * time.Millisecond)
	require.EqualValues(t, -1, e.acquire("b", "x", ttl), "fresh dataset: nothing granted")
	e.advance(ttl / 2)
	require.EqualValues(t, -1, e.acquire("b", "x", ttl))
	e.advance(ttl / 2)
	after := e.acquire("b", "x", ttl)
	require.Greater(t, after, before)
}

func TestScriptsReleasePublishes(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	require.NoError(t, MarkEstablished(context.Background(), e.c, "poll:"))
	ps := e.c.Subscribe(context.Background(), e.k.channel())
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(context.Background())
	require.NoError(t, err)
	require.Positive(t, e.acquire("a", "x y", time.Second))
	require.EqualValues(t, 1, e.release("a", "x y"))
	msg, err := ps.ReceiveMessage(context.Background())
	require.NoError(t, err)
	require.Equal(t, "release a x y", msg.Payload)
}

func TestScriptsListed(t *testing.T) {
	t.Parallel()
	s := Scripts()
	require.Len(t, s, 3)
	require.Len(t, ScriptNames(), 3)
	for name, src := range s {
		require.Contains(t, src, "KEYS[1]", name)
		require.Contains(t, ScriptNames(), redis.NewScript(src).Hash())
	}
}

// The fencing counter expires (fenceTTL); tokens granted after it has gone still exceed the earlier
// ones, because the floor is Redis TIME in microseconds.
func TestScriptsFenceCounterExpiresTokensStillIncrease(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	require.NoError(t, MarkEstablished(context.Background(), e.c, "poll:"))
	fence := time.Hour
	acquire := func(owner string) int64 {
		return e.run(acquireScript, []string{e.k.lease("x"), e.k.fence("x"), e.k.epoch("")}, owner, time.Second.Milliseconds(), fence.Milliseconds())
	}
	first := acquire("a:1")
	require.Positive(t, first)
	require.Equal(t, fence, e.mr.TTL(e.k.fence("x")), "the counter expires")
	e.advance(fence + time.Second)
	require.False(t, e.mr.Exists(e.k.fence("x")))
	require.Greater(t, acquire("b:1"), first)
}

// A holding value of an earlier holding of the same instance is another holding: no renew, no
// release, no "already ours".
func TestScriptsHoldingsOfOneInstanceAreDistinct(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t)
	require.NoError(t, MarkEstablished(context.Background(), e.c, "poll:"))
	tok := e.acquire("a:1", "x", time.Second)
	require.Positive(t, tok)
	require.EqualValues(t, 0, e.acquire("a:2", "x", time.Second), "a later attempt of the same instance is refused")
	require.EqualValues(t, 0, e.renew("a:2", "x", time.Second))
	require.EqualValues(t, 0, e.release("a:2", "x"))
	require.Equal(t, tok, e.acquire("a:1", "x", time.Second), "a re-send of the same attempt")
	require.EqualValues(t, 1, e.release("a:1", "x"))
	require.Greater(t, e.acquire("a:2", "x", time.Second), tok)
}

// The primary of a call is looked up by the part of its key Redis Cluster hashes, so one endpoint's
// keys share one lookup: the cluster layout's lease, fencing and epoch keys carry the endpoint's tag.
func TestHashTagAsRedisClusterHashesIt(t *testing.T) {
	t.Parallel()
	k := newKeys("poll:", LayoutCluster)
	require.Equal(t, "ep-1", hashTag(k.lease("ep-1")))
	require.Equal(t, hashTag(k.lease("ep-1")), hashTag(k.epoch("ep-1")))
	for key, want := range map[string]string{
		"plain":        "plain",
		"a{b}c{d}":     "b",
		"foo{}{bar}":   "foo{}{bar}", // an empty first tag: the whole key is hashed
		"foo{bar":      "foo{bar",
		"{user1000}.x": "user1000",
	} {
		require.Equal(t, want, hashTag(key), key)
	}
}
