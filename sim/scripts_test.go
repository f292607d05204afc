package sim

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/election"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/lease"
)

// Every built-in entry is valid, and every script the reference sends is in the catalogue under the
// operation it performs.
func TestBuiltinScriptsCoverTheReference(t *testing.T) {
	t.Parallel()
	c, err := NewScriptCatalogue(BuiltinScripts()...)
	require.NoError(t, err)
	for _, s := range BuiltinScripts() {
		require.NotEmpty(t, s.Origin, s.Name)
	}
	for sha, name := range lease.ScriptNames() {
		s, ok := c.Lookup([]any{"evalsha", sha, "1", "k"})
		require.True(t, ok, name)
		require.Equal(t, name, s.Op, s.Name)
	}
	for sha := range lease.ReadScripts() {
		require.True(t, c.BookkeepingRead([]any{"evalsha", sha, "1", "k"}))
		require.True(t, c.BookkeepingRead([]any{"evalsha_ro", sha, "1", "k"}))
	}
	for sha, name := range election.ScriptNames() {
		s, ok := c.Lookup([]any{"EVALSHA", sha, "1", "k"})
		require.True(t, ok, name)
		require.Equal(t, name, s.Op, s.Name)
	}
	for name, src := range election.Scripts() {
		s, ok := c.Lookup([]any{"eval", src, "1", "k"})
		require.True(t, ok, name)
		require.Equal(t, "election "+name, s.Name)
	}
}

// The libraries' scripts are classified from the arguments each library sends.
func TestLibraryScriptsClassify(t *testing.T) {
	t.Parallel()
	c := NewBuiltinCatalogue()
	const key = "poll:lease:ep-0"
	cases := []struct {
		name  string
		args  []any
		reply any
		want  history.Op
		ok    bool
	}{
		{"redis-py release", []any{"EVALSHA", "c3f8721cbb97f72bc19e972846bd7aaf91901658", "1", key, "tok"}, int64(1),
			history.Op{Kind: history.OpRelease, Key: key, Owner: "tok", OK: true}, true},
		{"redis-py extend replacing the TTL", []any{"EVALSHA", "a4e8783852e6b949f9ef3a97212805108459a890", "1", key, "tok", "2000", "1"}, int64(1),
			history.Op{Kind: history.OpRenew, Key: key, Owner: "tok", TTL: 2 * time.Second, OK: true}, true},
		{"redis-py extend adding to the TTL is not modelled", []any{"EVALSHA", "a4e8783852e6b949f9ef3a97212805108459a890", "1", key, "tok", "2000", "0"}, int64(1),
			history.Op{}, false},
		{"redis-py reacquire refused", []any{"EVALSHA", "1cac51482acf5858da00f6d685d68f886cd6b6b2", "1", key, "tok", "2000"}, int64(0),
			history.Op{Kind: history.OpRenew, Key: key, Owner: "tok", TTL: 2 * time.Second}, true},
		{"redlock lock", []any{"evalsha", "e5a322e2634ef59a516e8ea150cb085afafee684", "1", key, "v1", "3000"}, int64(1),
			history.Op{Kind: history.OpAcquire, Key: key, Owner: "v1", TTL: 3 * time.Second, OK: true}, true},
		{"redlock lock refused is not modelled", []any{"evalsha", "e5a322e2634ef59a516e8ea150cb085afafee684", "1", key, "v1", "3000"}, int64(0),
			history.Op{Kind: history.OpOther, Key: key, Owner: "v1", TTL: 3 * time.Second}, true},
		{"redlock lock on two resources is not modelled", []any{"evalsha", "e5a322e2634ef59a516e8ea150cb085afafee684", "2", key, "k2", "v1", "3000"}, int64(2),
			history.Op{}, false},
		{"redlock unlock", []any{"evalsha", "0f0f23b9048b36752b5be114f357ba083449f908", "1", key, "v1"}, int64(1),
			history.Op{Kind: history.OpRelease, Key: key, Owner: "v1", OK: true}, true},
		{"sesamecare acquire (ARGV[1] is the db)", []any{"evalsha", "1b77b94aa78451d55dfa97e18819bfbfc596cb5b", "1", key, "0", "v2", "1500"}, int64(1),
			history.Op{Kind: history.OpAcquire, Key: key, Owner: "v2", TTL: 1500 * time.Millisecond, OK: true}, true},
		{"sesamecare extend", []any{"evalsha", "820e9778d2b6733e9ed771e4be90ae73a95a6f3b", "1", key, "0", "v2", "1500"}, int64(1),
			history.Op{Kind: history.OpRenew, Key: key, Owner: "v2", TTL: 1500 * time.Millisecond, OK: true}, true},
		{"redis-semaphore refresh", []any{"evalsha", "594683e49a64ebaf975caf5f8079a1d097c438f1", "1", "mutex:" + key, "id", "1000"}, int64(1),
			history.Op{Kind: history.OpRenew, Key: "mutex:" + key, Owner: "id", TTL: time.Second, OK: true}, true},
		{"redis-semaphore release", []any{"evalsha", "7157921a7cc7cfba979acf6d63f073151df17d12", "1", "mutex:" + key, "id"}, int64(0),
			history.Op{Kind: history.OpRelease, Key: "mutex:" + key, Owner: "id"}, true},
		{"an unknown script", []any{"evalsha", "0123456789012345678901234567890123456789", "1", key, "id"}, int64(1),
			history.Op{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op, ok := c.Classify(tc.args, tc.reply, nil)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, op)
		})
	}
	// No reply seen: not a success, whatever the script.
	op, ok := c.Classify(cases[0].args, nil, errors.New("i/o timeout"))
	require.True(t, ok)
	require.False(t, op.OK)
}

// A script known by its shape is recognised when sent with EVAL, and with EVALSHA once its body has
// been seen on the wire.
func TestScriptCatalogueLearnsBodiesByShape(t *testing.T) {
	t.Parallel()
	c, err := NewScriptCatalogue(Script{Name: "renew", Source: "local v = redis.call('get', KEYS[1])\nreturn 1\n",
		Op: "renew", OK: ReplyMatch{Int: intp(1)}})
	require.NoError(t, err)
	reindented := "\n    local v = redis.call('get', KEYS[1])\n    return 1\n  "
	sha := sha1Hex(reindented)
	args := []any{"evalsha", sha, "1", "poll:lease:a", "me", "500"}
	_, ok := c.Classify(args, int64(1), nil)
	require.False(t, ok, "an unseen body")
	op, ok := c.Classify([]any{"eval", reindented, "1", "poll:lease:a", "me", "500"}, int64(1), nil)
	require.True(t, ok, "EVAL carries its body")
	require.Equal(t, history.OpRenew, op.Kind)
	c.LearnScript(reindented)
	op, ok = c.Classify(args, int64(1), redis.Nil)
	require.True(t, ok, "learned")
	require.False(t, op.OK)
	c.LearnScript("return 2")
	require.Empty(t, c.learned[sha1Hex("return 2")], "a body of no catalogued shape is not kept")
}

// A system file describes its scripts as JSON; bad entries are refused with a message naming them.
func TestScriptCatalogueFromJSON(t *testing.T) {
	t.Parallel()
	var scripts []Script
	require.NoError(t, json.Unmarshal([]byte(`[
		{"name": "my acquire", "origin": "app 1.2", "source": "return redis.call('set', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1])",
		 "op": "acquire", "owner": 2, "ttl": 1, "ttl_unit": "s", "ok": {"str": "OK"}},
		{"name": "my renew", "sha1": ["0123456789abcdef0123456789abcdef01234567"], "op": "renew", "when": {"3": "x"},
		 "ok": {"elem": 0, "int": 1, "and": [{"elem": 1, "owner": true}]}}
	]`), &scripts))
	c, err := NewScriptCatalogue(scripts...)
	require.NoError(t, err)
	op, ok := c.Classify([]any{"eval", scripts[0].Source, "1", "poll:lease:a", "30", "me"}, "OK", nil)
	require.True(t, ok)
	require.Equal(t, history.Op{Kind: history.OpAcquire, Key: "poll:lease:a", Owner: "me", TTL: 30 * time.Second, OK: true}, op)
	op, ok = c.Classify([]any{"evalsha", "0123456789abcdef0123456789abcdef01234567", "1", "poll:lease:a", "me", "100", "x"},
		[]any{int64(1), "me"}, nil)
	require.True(t, ok)
	require.True(t, op.OK)

	for name, tc := range map[string]struct {
		s   Script
		msg string
	}{
		"no name":       {Script{Op: "renew", Source: "x"}, "needs a name"},
		"bad op":        {Script{Name: "s", Op: "lock", Source: "x"}, `op "lock"`},
		"no source":     {Script{Name: "s", Op: "read"}, "give its source"},
		"bad hash":      {Script{Name: "s", Op: "read", SHA1: []string{"ABC"}}, "not a SHA1"},
		"no ok":         {Script{Name: "s", Op: "release", Source: "x"}, "which reply means success"},
		"key past keys": {Script{Name: "s", Op: "read", Source: "x", Keys: 1, Key: 2}, "beyond the 1 keys"},
		"bad unit":      {Script{Name: "s", Op: "read", Source: "x", TTLUnit: "m"}, "ttl_unit"},
		"bad when":      {Script{Name: "s", Op: "read", Source: "x", When: map[int]string{0: "a"}}, "indexes start at 1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewScriptCatalogue(tc.s)
			require.ErrorContains(t, err, tc.msg)
		})
	}
	_, err = NewScriptCatalogue(Script{Name: "a", Op: "read", Source: "x"}, Script{Name: "b", Op: "read", Source: "x"})
	require.ErrorContains(t, err, `already "a"`)
}
