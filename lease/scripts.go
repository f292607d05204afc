package lease

import (
	"context"
	"embed"
	"errors"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

func scriptSource(name string) string {
	b, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic("lease: missing embedded script " + name)
	}
	return string(b)
}

var (
	acquireSource = scriptSource("acquire")
	renewSource   = scriptSource("renew")
	releaseSource = scriptSource("release")

	acquireScript = redis.NewScript(acquireSource)
	renewScript   = redis.NewScript(renewSource)
	releaseScript = redis.NewScript(releaseSource)

	// guardLeftScript reads how long the fresh-dataset guard recorded in one epoch key still lasts
	// (read only; the cluster layout's per-endpoint guards).
	guardLeftScript = redis.NewScript(scriptSource("guard_left"))

	// sessionsVersionScript reads SessionSource's change counter and the server's run_id (read only).
	sessionsVersionScript = redis.NewScript(scriptSource("sessions_version"))

	// establishScript creates the dataset epoch key with the guard already over (MarkEstablished).
	establishScript = redis.NewScript(scriptSource("establish"))
)

// Scripts returns the Lua source of the lease operations by name ("acquire", "renew", "release"), for
// tools that classify recorded commands. Conventions shared by all three:
//
//   - KEYS[1] is the lease key <KeyPrefix>lease:<endpoint>; acquire also takes KEYS[2], the fencing
//     counter <KeyPrefix>fence:<endpoint>, and KEYS[3], the dataset epoch key <KeyPrefix>epoch. In
//     the cluster layout (Config.KeyLayout) the endpoint is a hash tag, {<endpoint>}, and the epoch
//     key is the endpoint's own, <KeyPrefix>epoch:{<endpoint>}: every call touches one slot.
//   - ARGV[1] is the holding value (the lease key's value): <instance ID>:<attempt nonce>, new for every
//     acquire attempt and the same across client re-sends of that attempt; ARGV[2] the lease TTL in
//     milliseconds. Acquire's ARGV[3] is the fencing counter's TTL in milliseconds, and ARGV[4], in the
//     cluster layout only, the per-endpoint epoch key's.
//   - acquire returns the fencing token (> 0) when the lease holds ARGV[1] after the call (also when it
//     already did: a re-sent acquire is idempotent and returns the same token), 0 when any other value
//     holds it (another instance, or an earlier holding of this one), and -1 while the fresh-dataset
//     guard refuses every grant.
//   - renew returns 1 if it extended a lease holding ARGV[1], 0 otherwise.
//   - release returns 1 if it deleted a lease holding ARGV[1], 0 otherwise; ARGV[3] and ARGV[4], when
//     given, are a pub/sub channel and the message published on a successful release.
//
// Scripts are sent with EVALSHA, falling back to EVAL after a NOSCRIPT reply (a restarted Redis).
func Scripts() map[string]string {
	return map[string]string{
		"acquire": acquireSource,
		"renew":   renewSource,
		"release": releaseSource,
	}
}

// ScriptNames maps the SHA1 of each script to its name, for tools that see EVALSHA or EVAL commands
// (hash the EVAL source).
func ScriptNames() map[string]string { return maps.Clone(scriptNames) }

var scriptNames = map[string]string{
	acquireScript.Hash(): "acquire",
	renewScript.Hash():   "renew",
	releaseScript.Hash(): "release",
}

// ReadScripts maps the SHA1 of each script that only reads (it writes no key) to its name:
// "sessions-version", SessionSource's read of its change counter, and "guard-left", the read of when
// an endpoint's fresh-dataset guard ends (cluster layout). Tools that record commands can treat
// these as reads of the system's own bookkeeping.
func ReadScripts() map[string]string {
	return map[string]string{sessionsVersionScript.Hash(): "sessions-version", guardLeftScript.Hash(): "guard-left"}
}

// KeyLayout is how the manager names an endpoint's keys (see the package doc, "Key layouts").
type KeyLayout string

// Key layouts.
const (
	// LayoutSingle names an endpoint's keys <prefix>lease:<endpoint> and <prefix>fence:<endpoint>,
	// with one dataset epoch key <prefix>epoch for all endpoints: one Redis primary (alone, or with
	// replicas and Sentinel). The default, and the layout of every earlier release.
	LayoutSingle KeyLayout = "single"
	// LayoutCluster puts each endpoint's keys in one hash slot, with an epoch key of its own:
	// <prefix>lease:{<endpoint>}, <prefix>fence:{<endpoint>}, <prefix>epoch:{<endpoint>}. Required on
	// Redis Cluster; works on one primary too.
	LayoutCluster KeyLayout = "cluster"
)

// KeyLayouts lists the valid values of Config.KeyLayout.
var KeyLayouts = []KeyLayout{LayoutSingle, LayoutCluster}

// keys names every Redis key and channel the manager uses.
type keys struct {
	prefix  string
	cluster bool // LayoutCluster: per-endpoint hash tags and epoch keys
}

func newKeys(prefix string, layout KeyLayout) keys {
	return keys{prefix: prefix, cluster: layout == LayoutCluster}
}

// tag is how an endpoint appears in its keys: as a hash tag in the cluster layout, so that the lease,
// fence and epoch keys of one endpoint share a slot.
func (k keys) tag(endpoint string) string {
	if k.cluster {
		return "{" + endpoint + "}"
	}
	return endpoint
}

func (k keys) lease(endpoint string) string { return k.prefix + "lease:" + k.tag(endpoint) }
func (k keys) fence(endpoint string) string { return k.prefix + "fence:" + k.tag(endpoint) }
func (k keys) node(id string) string        { return k.prefix + "node:" + id }
func (k keys) nodes() string                { return k.prefix + "nodes" }

// epoch is the dataset epoch key that guards endpoint's grants: one per prefix in the single layout,
// one per endpoint in the cluster layout.
func (k keys) epoch(endpoint string) string {
	if k.cluster {
		return k.prefix + "epoch:" + k.tag(endpoint)
	}
	return k.prefix + "epoch"
}
func (k keys) channel() string { return k.prefix + "events" }

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func ttlMillis(d time.Duration) int64 { return d.Milliseconds() }

// scriptCall is one script invocation in a pipelined batch.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	// plain, when set, replaces the script by plain commands queued on the pipeline (the epoch refresh
	// of guard.go, Stop's heartbeat delete and announcement); the returned function reads the result
	// once the pipeline has run.
	plain func(ctx context.Context, p redis.Pipeliner) func() (int64, error)
	// wait, when positive, is Config.WaitReplicas for a grant or renewal: the batch ends with WAIT,
	// and a write it does not report on wait replicas fails with ErrNotReplicated (wait.go).
	wait    int
	node    string    // on a ClusterClient, the primary the call was sent to (runGroups); "" otherwise
	sent    time.Time // when the request that produced res was sent (on the manager's clock)
	replied time.Time // when its reply (or failure) came back
	res     int64
	err     error
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// runBatch sends calls in one pipeline with EVALSHA. Calls that fail with NOSCRIPT (the script cache
// was emptied, e.g. by a restart) are re-sent with EVAL in a second pipeline. Each call's sent field is
// the time its answering request was sent, read from now just before the pipeline goes out. On a
// ClusterClient the calls are sent by shard (see runGroups) and runBatch returns when every shard's
// group has its replies.
func runBatch(ctx context.Context, c redis.UniversalClient, now func() time.Time, calls []*scriptCall) {
	runGroups(ctx, c, now, calls, nil)
}

// runGroups is runBatch, with settle called for each group of calls as soon as that group's replies
// are in (idx: the group's indexes in calls, ascending), from the group's own goroutine.
//
// On a ClusterClient the calls are grouped by the primary that serves their first key (the cluster
// layout keeps every key of a call in one slot), and each group goes out in a pipeline of its own, all
// at once: a shard whose primary is unreachable holds up, and fails, only its own group. One pipeline
// across the shards would not: go-redis answers it when its last node has, and when it gives up
// retrying a dead node at the context's end it stamps that error on every command of the pipeline,
// replies of the healthy shards included. Each call's node field names its group's primary. On any
// other client there is one group.
func runGroups(ctx context.Context, c redis.UniversalClient, now func() time.Time, calls []*scriptCall, settle func(idx []int)) {
	if len(calls) == 0 {
		return
	}
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		runPipeline(ctx, c, now, calls)
		if settle != nil {
			settle(allIndexes(len(calls)))
		}
		return
	}
	groups := byNode(ctx, cc, calls)
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := make([]*scriptCall, len(g))
			for i, k := range g {
				batch[i] = calls[k]
			}
			runPipeline(ctx, c, now, batch)
			if settle != nil {
				settle(g)
			}
		}()
	}
	wg.Wait()
}

// byNode groups the indexes of calls by the primary that serves each call's first key, as cc knows
// the cluster now, and records it in the call's node field. A call whose primary cannot be told goes
// in a group of its own kind (node ""), which the cluster client routes command by command. The
// primary is looked up once per hash tag, so calls on one endpoint's keys (the release of a stale value
// and the acquire queued after it) go in one group, in order, even if the client's view of the
// cluster changes while the batch is split.
func byNode(ctx context.Context, cc *redis.ClusterClient, calls []*scriptCall) [][]int {
	at := map[string]int{}
	nodes := map[string]string{} // hash tag -> primary
	var groups [][]int
	for i, sc := range calls {
		sc.node = ""
		if len(sc.keys) > 0 {
			tag := hashTag(sc.keys[0])
			node, ok := nodes[tag]
			if !ok {
				node = nodeOf(ctx, cc, sc.keys[0])
				nodes[tag] = node
			}
			sc.node = node
		}
		g, ok := at[sc.node]
		if !ok {
			g = len(groups)
			at[sc.node] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// hashTag is the part of key Redis Cluster hashes: the first non-empty {...} section, else the key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// nodeOf is the address of the primary that serves key, as cc knows the cluster now ("" if unknown).
func nodeOf(ctx context.Context, cc *redis.ClusterClient, key string) string {
	cl, err := cc.MasterForKey(ctx, key)
	if err != nil || cl == nil {
		return ""
	}
	return cl.Options().Addr
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// runPipeline sends calls in one pipeline, as runBatch describes.
func runPipeline(ctx context.Context, c redis.UniversalClient, now func() time.Time, calls []*scriptCall) {
	exec := func(useEval bool, batch []*scriptCall) {
		p := c.Pipeline()
		cmds := make([]*redis.Cmd, len(batch))
		var plain []func() (int64, error)
		for i, sc := range batch {
			switch {
			case sc.plain != nil:
				if plain == nil {
					plain = make([]func() (int64, error), len(batch))
				}
				plain[i] = sc.plain(ctx, p)
			case useEval:
				cmds[i] = sc.script.Eval(ctx, p, sc.keys, sc.args...)
			default:
				cmds[i] = sc.script.EvalSha(ctx, p, sc.keys, sc.args...)
			}
		}
		wait := queueWait(ctx, p, batch)
		sent := now()
		_, _ = p.Exec(ctx)
		replied := now()
		for i, sc := range batch {
			sc.sent, sc.replied = sent, replied
			if cmds[i] != nil {
				sc.res, sc.err = cmds[i].Int64()
			} else {
				sc.res, sc.err = plain[i]()
			}
			if errors.Is(sc.err, redis.Nil) {
				sc.res, sc.err = 0, nil
			}
			settleWait(sc, wait)
		}
	}
	exec(false, calls)
	var retry []*scriptCall
	for _, sc := range calls {
		if sc.plain == nil && isNoScript(sc.err) {
			retry = append(retry, sc)
		}
	}
	if len(retry) > 0 {
		exec(true, retry)
	}
}
