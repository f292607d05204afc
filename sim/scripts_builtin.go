package sim

import (
	"sort"

	"github.com/tenurelabs/tenure/election"
	"github.com/tenurelabs/tenure/lease"
)

func intp(n int64) *int64   { return &n }
func elemp(i int) *int      { return &i }
func strp(s string) *string { return &s }

// ReferenceLeaseScripts describes the reference lease manager's scripts (lease.Scripts has their
// conventions): acquire (with every variant lease.ScriptNames lists as "acquire": in a build with the
// tenure_mutants tag, the checker-power mutants', which keep its conventions) answers
// the fencing token, or 0 when another holding has the lease, or -1 while the fresh-dataset guard
// refuses every grant (no answer of the lease model); renew and release answer 1 or 0. The reads of
// the session change counter and of the guard are bookkeeping.
func ReferenceLeaseScripts() []Script {
	src := lease.Scripts()
	var acquires, reads []string
	for sha, name := range lease.ScriptNames() {
		if name == "acquire" && sha != sha1Hex(src["acquire"]) {
			acquires = append(acquires, sha)
		}
	}
	for sha := range lease.ReadScripts() {
		reads = append(reads, sha)
	}
	sort.Strings(acquires)
	sort.Strings(reads)
	const origin = "github.com/tenurelabs/tenure/lease/scripts"
	return []Script{
		{Name: "lease acquire", Origin: origin, Source: src["acquire"], SHA1: acquires, Op: "acquire",
			OK: ReplyMatch{MinInt: intp(1)}, NotModelled: []ReplyMatch{{Int: intp(-1)}}},
		{Name: "lease renew", Origin: origin, Source: src["renew"], Op: "renew", OK: ReplyMatch{Int: intp(1)}},
		{Name: "lease release", Origin: origin, Source: src["release"], Op: "release", OK: ReplyMatch{Int: intp(1)}},
		{Name: "lease bookkeeping read", Origin: origin, SHA1: reads, Op: "bookkeeping"},
	}
}

// ReferenceElectionScripts describes the reference election's Redis scripts (see election.ScriptNames).
// Acquire answers {1, term} when granted and {0, holder} when not; a refusal with no holder (the
// fresh-dataset guard) or naming the caller itself (an earlier holding of the same instance: the model
// knows owners, not attempts) is no answer of the model. Renew and release also compare the term, which
// the model does not track, so their refusals are not modelled; a release succeeds on a key already
// gone with nobody granted since (AbsentOK).
func ReferenceElectionScripts() []Script {
	src := election.Scripts()
	const origin = "github.com/tenurelabs/tenure/election/scripts"
	refused := ReplyMatch{Elem: elemp(0), Int: intp(0)}
	return []Script{
		{Name: "election acquire", Origin: origin, Source: src["acquire"], Op: "acquire",
			OK: ReplyMatch{Elem: elemp(0), Int: intp(1)},
			NotModelled: []ReplyMatch{
				{And: []ReplyMatch{refused, {Elem: elemp(1), Str: strp("")}}},
				{And: []ReplyMatch{refused, {Elem: elemp(1), Owner: true}}},
			}},
		{Name: "election renew", Origin: origin, Source: src["renew"], Op: "renew", TTL: 3,
			OK: ReplyMatch{Int: intp(1)}, RefusalNotModelled: true},
		{Name: "election release", Origin: origin, Source: src["release"], Op: "release",
			OK: ReplyMatch{Int: intp(1)}, RefusalNotModelled: true, AbsentOK: true},
	}
}

// LibraryScripts describes the scripts of lock libraries that teams use, by the SHA1 of the exact text
// each version sends and of its shape (ScriptShape). The hashes were taken from the published packages
// named in Origin; to check one, hash the script's string as the library holds it, e.g.
//
//	python3 -c 'import hashlib, redis.lock as l; print(hashlib.sha1(l.Lock.LUA_RELEASE_SCRIPT.encode()).hexdigest())'
//
// Their acquires that are plain SET NX PX commands (redis-py Lock, redis-semaphore Mutex) are the
// built-in classifier's. Two calls are recorded but not modelled: redis-py's extend() without
// replace_ttl (it adds to the TTL that remains, which the model cannot follow), and a Redlock call on
// several resources at once. Redlock's acquire is not idempotent for its own value (a re-sent acquire
// whose first attempt took effect answers 0), so its refusals are not modelled.
func LibraryScripts() []Script {
	one := ReplyMatch{Int: intp(1)}
	const (
		redisPy   = "redis-py 4.3.4 (Debian python3-redis 4.3.4-3), redis/lock.py"
		redlock   = "npm redlock 4.2.0, redlock.js"
		sesame    = "npm @sesamecare-oss/redlock 1.4.0, build/scripts.js"
		semaphore = "npm redis-semaphore 5.8.0, lib/mutex"
	)
	return []Script{
		{Name: "redis-py Lock.release", Origin: redisPy + " Lock.LUA_RELEASE_SCRIPT", Op: "release", OK: one,
			SHA1:  []string{"c3f8721cbb97f72bc19e972846bd7aaf91901658"},
			Shape: []string{"2aef8d7ce63503709a01cbf6ad6bb4b93d5c3909"}},
		{Name: "redis-py Lock.extend (replace_ttl)", Origin: redisPy + " Lock.LUA_EXTEND_SCRIPT", Op: "renew", OK: one,
			When:  map[int]string{3: "1"},
			SHA1:  []string{"a4e8783852e6b949f9ef3a97212805108459a890"},
			Shape: []string{"829408cc83d4524666232bd8beebe3bcf873ac70"}},
		{Name: "redis-py Lock.reacquire", Origin: redisPy + " Lock.LUA_REACQUIRE_SCRIPT", Op: "renew", OK: one,
			SHA1:  []string{"1cac51482acf5858da00f6d685d68f886cd6b6b2"},
			Shape: []string{"042112cf75a3fdabb4e02600ce494eff4b2d2906"}},
		{Name: "redlock lock", Origin: redlock + " lockScript", Op: "acquire", Keys: 1, OK: one, RefusalNotModelled: true,
			SHA1:  []string{"e5a322e2634ef59a516e8ea150cb085afafee684"},
			Shape: []string{"553dd04ae84661066255e93d1f84179ceb51e041"}},
		{Name: "redlock extend", Origin: redlock + " extendScript", Op: "renew", Keys: 1, OK: one,
			SHA1:  []string{"ce46f80993d5dac20dd066eb301a4e37994bdbed"},
			Shape: []string{"bdc4520f56bc05f928e229c28338dca2c3c1fd91"}},
		{Name: "redlock unlock", Origin: redlock + " unlockScript", Op: "release", Keys: 1, OK: one,
			SHA1:  []string{"0f0f23b9048b36752b5be114f357ba083449f908"},
			Shape: []string{"9a480bddcbbcf77bfd83f4de59809637ef1c4a3c"}},
		// ARGV[1] is the database the script SELECTs; the lock value and TTL follow it.
		{Name: "@sesamecare-oss/redlock acquire", Origin: sesame + " ACQUIRE_SCRIPT", Op: "acquire", Keys: 1,
			Owner: 2, TTL: 3, OK: one, RefusalNotModelled: true,
			SHA1:  []string{"1b77b94aa78451d55dfa97e18819bfbfc596cb5b"},
			Shape: []string{"d529be5613873e9447afa80ed419017e04b2a982"}},
		{Name: "@sesamecare-oss/redlock extend", Origin: sesame + " EXTEND_SCRIPT", Op: "renew", Keys: 1,
			Owner: 2, TTL: 3, OK: one,
			SHA1:  []string{"820e9778d2b6733e9ed771e4be90ae73a95a6f3b"},
			Shape: []string{"c21f2a77c38dd5a3689ef83262c3c483e07f4984"}},
		{Name: "@sesamecare-oss/redlock release", Origin: sesame + " RELEASE_SCRIPT", Op: "release", Keys: 1,
			Owner: 2, OK: one,
			SHA1:  []string{"df51f6837dcfe303d334e6abea9aeae192bab216"},
			Shape: []string{"fab665a51ab9694b84d98df05ce74cf6fd480b3b"}},
		{Name: "redis-semaphore Mutex refresh", Origin: semaphore + "/refresh.js expireIfEqualLua", Op: "renew", OK: one,
			SHA1:  []string{"594683e49a64ebaf975caf5f8079a1d097c438f1"},
			Shape: []string{"8c3d2c7c01472411ed40f4d177b25d1c53b70c8b"}},
		{Name: "redis-semaphore Mutex release", Origin: semaphore + "/release.js delIfEqualLua", Op: "release", OK: one,
			SHA1:  []string{"7157921a7cc7cfba979acf6d63f073151df17d12"},
			Shape: []string{"21774675c9c99c16b85169c12884ee0b0874fddb"}},
	}
}

// BuiltinScripts is every built-in entry: the reference's lease and election scripts and the
// libraries' (LibraryScripts).
func BuiltinScripts() []Script {
	return append(append(ReferenceLeaseScripts(), ReferenceElectionScripts()...), LibraryScripts()...)
}

// NewBuiltinCatalogue returns a catalogue of BuiltinScripts, to which a system may Add its own.
func NewBuiltinCatalogue() *ScriptCatalogue { return mustCatalogue(BuiltinScripts()...) }

// mustCatalogue builds a catalogue of entries known to be valid (a test checks the built-in ones).
func mustCatalogue(scripts ...Script) *ScriptCatalogue {
	c, err := NewScriptCatalogue(scripts...)
	if err != nil {
		panic(err)
	}
	return c
}
