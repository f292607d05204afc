package sim

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// Script says what one Lua script does in the lease model, so that the recorder can classify the
// EVAL and EVALSHA calls (and their _RO forms) that run it. Scripts are told apart by source: Source,
// or the SHA1s of source texts given by hash only, or the SHA1s of their shapes (ScriptShape: the text
// with its white space collapsed, for a library whose versions differ only in indentation).
//
// A call is modelled when it has the number of keys the script expects (Keys), the arguments the
// script is described by (Key, Owner, TTL) and the argument values When asks for; other calls of the
// script are recorded but not modelled. The zero Key, Owner and TTL mean KEYS[1], ARGV[1] and ARGV[2].
//
// The JSON form is what a system file uses to describe its own scripts.
type Script struct {
	// Name names the script for the reader ("redis-py Lock.release").
	Name string `json:"name"`
	// Origin says where the text comes from: library, version, file.
	Origin string `json:"origin,omitempty"`
	// Source is the script's text. Its SHA1 is what EVALSHA names.
	Source string `json:"source,omitempty"`
	// SHA1 lists SHA1s (hex) of source texts known by hash only.
	SHA1 []string `json:"sha1,omitempty"`
	// Shape lists SHA1s (hex) of ScriptShape of source texts: such a text is recognised when it is sent
	// with EVAL, or with EVALSHA once its body has been seen on the wire (EVAL, SCRIPT LOAD).
	Shape []string `json:"shape,omitempty"`
	// Op is what the script does: "acquire", "renew", "release", "read" (reads the lease key: its reply
	// is the holder) or "bookkeeping" (reads only the system's own bookkeeping: counted per instance,
	// not recorded; see BookkeepingReader).
	Op string `json:"op"`
	// Keys is the number of KEYS a modelled call has; 0: any. A multi-resource lock's call on several
	// keys cannot be judged key by key.
	Keys int `json:"keys,omitempty"`
	// Key is the index (from 1) in KEYS of the lease key.
	Key int `json:"key,omitempty"`
	// Owner is the index (from 1) in ARGV of the owner value the script writes or compares.
	Owner int `json:"owner,omitempty"`
	// TTL is the index (from 1) in ARGV of the time to live an acquire or renew sets.
	TTL int `json:"ttl,omitempty"`
	// TTLUnit is "ms" (the default) or "s".
	TTLUnit string `json:"ttl_unit,omitempty"`
	// When maps ARGV indexes (from 1) to the values a modelled call has there (redis-py's extend is a
	// renewal only when ARGV[3] is "1", replacing the TTL; otherwise it adds to what remains).
	When map[int]string `json:"when,omitempty"`
	// OK matches the replies that mean success. An acquire, renew or release must set it.
	OK ReplyMatch `json:"ok"`
	// NotModelled lists replies that are no answer of the lease model (a guard that refused whatever
	// the key holds): the call is then recorded as "other".
	NotModelled []ReplyMatch `json:"not_modelled,omitempty"`
	// RefusalNotModelled says that every answered reply OK does not match is no answer of the model
	// either: the script refuses for reasons the model does not see (a term check, an acquire that is
	// not idempotent for its own owner).
	RefusalNotModelled bool `json:"refusal_not_modelled,omitempty"`
	// AbsentOK marks a release that also succeeds on a key already gone (history.Op.AbsentOK).
	AbsentOK bool `json:"absent_ok,omitempty"`
}

// ReplyMatch matches a script's reply. Every condition set must hold; the zero ReplyMatch matches any
// reply.
type ReplyMatch struct {
	// Elem, when set, matches element Elem (from 0) of an array reply rather than the reply.
	Elem *int `json:"elem,omitempty"`
	// Int matches an integer equal to it; MinInt an integer at least it.
	Int    *int64 `json:"int,omitempty"`
	MinInt *int64 `json:"min_int,omitempty"`
	// Str matches a string (bulk or status) equal to it; Owner a string equal to the call's owner.
	Str   *string `json:"str,omitempty"`
	Owner bool    `json:"owner,omitempty"`
	// And lists further matches that must hold too (on other elements).
	And []ReplyMatch `json:"and,omitempty"`
}

func (m ReplyMatch) empty() bool {
	return m.Elem == nil && m.Int == nil && m.MinInt == nil && m.Str == nil && !m.Owner && len(m.And) == 0
}

func (m ReplyMatch) matches(reply any, owner string) bool {
	for _, a := range m.And {
		if !a.matches(reply, owner) {
			return false
		}
	}
	v := reply
	if m.Elem != nil {
		arr, ok := reply.([]any)
		if !ok || *m.Elem < 0 || *m.Elem >= len(arr) {
			return false
		}
		v = arr[*m.Elem]
	}
	n, isInt := v.(int64)
	s, isStr := v.(string)
	return (m.Int == nil || (isInt && n == *m.Int)) && (m.MinInt == nil || (isInt && n >= *m.MinInt)) &&
		(m.Str == nil || (isStr && s == *m.Str)) && (!m.Owner || (isStr && s == owner))
}

// ScriptShape is a script's text with every run of white space made one space, and none at either
// end: two texts that differ only in indentation or line breaks have one shape.
func ScriptShape(source string) string { return strings.Join(strings.Fields(source), " ") }

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ScriptCatalogue classifies script calls by the Scripts it holds. It implements OpClassifier and
// BookkeepingReader, and learns script bodies seen on the wire (LearnScript); it is safe for
// concurrent use. Calls of scripts it does not hold are left to the built-in classifier (recorded,
// not modelled).
type ScriptCatalogue struct {
	mu      sync.RWMutex
	bySHA   map[string]*Script // SHA1 of a source text
	byShape map[string]*Script // SHA1 of a text's shape
	learned map[string]string  // SHA1 of a body seen on the wire -> SHA1 of its shape
}

// maxLearned bounds the bodies a catalogue remembers: a client that sends endless distinct scripts
// must not grow it without end.
const maxLearned = 4096

// NewScriptCatalogue returns a catalogue of scripts, or an error naming the first bad entry.
func NewScriptCatalogue(scripts ...Script) (*ScriptCatalogue, error) {
	c := &ScriptCatalogue{bySHA: map[string]*Script{}, byShape: map[string]*Script{}, learned: map[string]string{}}
	for _, s := range scripts {
		if err := c.Add(s); err != nil {
			return nil, err
		}
	}
	return c, nil
}

var scriptOps = map[string]history.OpKind{"acquire": history.OpAcquire, "renew": history.OpRenew,
	"release": history.OpRelease, "read": history.OpRead, "bookkeeping": history.OpOther}

// Add adds a script, or returns an error saying what is wrong with it.
func (c *ScriptCatalogue) Add(s Script) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("sim: script %q: %s", s.Name, fmt.Sprintf(format, args...))
	}
	kind, ok := scriptOps[s.Op]
	switch {
	case s.Name == "":
		return errors.New("sim: a script needs a name (what it is, for the reader)")
	case !ok:
		return bad("op %q: want acquire, renew, release, read or bookkeeping", s.Op)
	case s.Source == "" && len(s.SHA1) == 0 && len(s.Shape) == 0:
		return bad("give its source, or the SHA1 of its source or of its shape")
	case s.Keys < 0 || s.Key < 0 || s.Owner < 0 || s.TTL < 0:
		return bad("keys, key, owner and ttl are counts and indexes from 1; none can be negative")
	case s.Keys > 0 && s.key() > s.Keys:
		return bad("key %d is beyond the %d keys of a modelled call", s.key(), s.Keys)
	case s.TTLUnit != "" && s.TTLUnit != "ms" && s.TTLUnit != "s":
		return bad("ttl_unit %q: want ms or s", s.TTLUnit)
	case (kind == history.OpAcquire || kind == history.OpRenew || kind == history.OpRelease) && s.OK.empty():
		return bad("say which reply means success (ok), e.g. {\"int\": 1}")
	}
	for i := range s.When {
		if i < 1 {
			return bad("when: ARGV index %d; indexes start at 1", i)
		}
	}
	hashes := append([]string(nil), s.SHA1...)
	if s.Source != "" {
		hashes = append(hashes, sha1Hex(s.Source))
	}
	shapes := append([]string(nil), s.Shape...)
	if s.Source != "" {
		shapes = append(shapes, sha1Hex(ScriptShape(s.Source)))
	}
	for _, h := range append(append([]string(nil), hashes...), shapes...) {
		if len(h) != 40 || strings.ToLower(h) != h || strings.Trim(h, "0123456789abcdef") != "" {
			return bad("%q is not a SHA1 in lower-case hex (40 digits)", h)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	entry := &s
	for _, h := range hashes {
		if old, ok := c.bySHA[h]; ok && old.Name != s.Name {
			return bad("SHA1 %s is already %q", h, old.Name)
		}
		c.bySHA[h] = entry
	}
	for _, h := range shapes {
		if old, ok := c.byShape[h]; ok && old.Name != s.Name {
			return bad("shape SHA1 %s is already %q", h, old.Name)
		}
		c.byShape[h] = entry
	}
	return nil
}

// LearnScript notes a script body seen on the wire (sent with EVAL or SCRIPT LOAD), so that EVALSHA
// calls of it are recognised by its shape when its exact text is not catalogued.
func (c *ScriptCatalogue) LearnScript(body string) {
	sha, shape := sha1Hex(body), sha1Hex(ScriptShape(body))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.bySHA[sha]; ok {
		return
	}
	if _, ok := c.byShape[shape]; ok && len(c.learned) < maxLearned {
		c.learned[sha] = shape
	}
}

// Lookup returns the script a command runs, if the catalogue holds it.
func (c *ScriptCatalogue) Lookup(args []any) (Script, bool) {
	s := c.lookup(args)
	if s == nil {
		return Script{}, false
	}
	return *s, true
}

func (c *ScriptCatalogue) lookup(args []any) *Script {
	if len(args) < 2 {
		return nil
	}
	var sha, shape string
	switch commandName(args) {
	case "evalsha", "evalsha_ro":
		sha = strings.ToLower(fmt.Sprint(args[1]))
	case "eval", "eval_ro":
		body := fmt.Sprint(args[1])
		sha, shape = sha1Hex(body), sha1Hex(ScriptShape(body))
	default:
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s := c.bySHA[sha]; s != nil {
		return s
	}
	if shape == "" {
		shape = c.learned[sha]
	}
	return c.byShape[shape]
}

// BookkeepingRead implements BookkeepingReader: calls of scripts whose Op is "bookkeeping".
func (c *ScriptCatalogue) BookkeepingRead(args []any) bool {
	s := c.lookup(args)
	return s != nil && s.Op == "bookkeeping"
}

func (s *Script) key() int   { return max(s.Key, 1) }
func (s *Script) owner() int { return max(s.Owner, 1) }
func (s *Script) ttl() int {
	if s.TTL == 0 {
		return 2
	}
	return s.TTL
}

// Classify implements OpClassifier for the catalogue's scripts (see Script).
func (c *ScriptCatalogue) Classify(args []any, reply any, err error) (history.Op, bool) {
	s := c.lookup(args)
	if s == nil || s.Op == "bookkeeping" || len(args) < 3 {
		return history.Op{}, false
	}
	nkeys, convErr := strconv.Atoi(fmt.Sprint(args[2]))
	if convErr != nil || nkeys < 0 || len(args) < 3+nkeys || (s.Keys > 0 && nkeys != s.Keys) || s.key() > nkeys {
		return history.Op{}, false
	}
	keys, argv := args[3:3+nkeys], args[3+nkeys:]
	kind := scriptOps[s.Op]
	needArgs := s.owner()
	if kind == history.OpAcquire || kind == history.OpRenew {
		needArgs = max(needArgs, s.ttl())
	}
	if len(argv) < needArgs {
		return history.Op{}, false
	}
	for i, want := range s.When {
		if i > len(argv) || fmt.Sprint(argv[i-1]) != want {
			return history.Op{}, false
		}
	}
	op := history.Op{Kind: kind, Key: fmt.Sprint(keys[s.key()-1]), Owner: fmt.Sprint(argv[s.owner()-1])}
	switch kind {
	case history.OpAcquire, history.OpRenew:
		n, _ := strconv.ParseInt(fmt.Sprint(argv[s.ttl()-1]), 10, 64)
		unit := time.Millisecond
		if s.TTLUnit == "s" {
			unit = time.Second
		}
		op.TTL = time.Duration(n) * unit
	case history.OpRelease:
		op.AbsentOK = s.AbsentOK
	case history.OpRead:
		op.Owner = ""
		if v, ok := reply.(string); ok {
			op.Value = v
		}
		op.OK = true
		return op, true
	}
	op.OK = err == nil && s.OK.matches(reply, op.Owner)
	for _, m := range s.NotModelled {
		if reply != nil && m.matches(reply, op.Owner) {
			op.Kind = history.OpOther
		}
	}
	if s.RefusalNotModelled && err == nil && !op.OK {
		op.Kind = history.OpOther
	}
	return op, true
}
