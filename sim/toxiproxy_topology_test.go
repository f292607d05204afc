package sim_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/toxitest"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
)

// listProxies is a fault that only looks: it records the proxies a toxiproxy-server holds, each with
// the names of its toxics.
type listProxies struct {
	url string
	mu  *sync.Mutex
	got map[string][]string
}

func (listProxies) Name() string { return "list-proxies" }

func (f listProxies) Apply(context.Context, chaos.Env) (func(context.Context) error, chaos.Applied, error) {
	ps, err := toxiclient.NewClient(f.url).Proxies()
	if err != nil {
		return nil, chaos.Applied{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, p := range ps {
		var toxics []string
		if ts, err := p.Toxics(); err == nil {
			for _, tx := range ts {
				toxics = append(toxics, tx.Name)
			}
		}
		sort.Strings(toxics)
		f.got[name] = toxics
	}
	return nil, chaos.Applied{}, nil
}

// With --toxiproxy, a Sentinel set's peer links (the addresses its nodes are announced at, which
// replication and the sentinels use) are created on that server, under the run's prefix, next to the
// instances' links, and a Sentinel fault acts through it: isolating the primary puts its toxics on the
// primary's peer proxy there. The run removes every proxy it created.
func TestSentinelPeerLinksOnExternalToxiproxy(t *testing.T) {
	t.Parallel()
	if _, ok := redisserver.Available(); !ok {
		t.Skip("redis-server not installed")
	}
	url := toxitest.Start(t)
	seen := listProxies{url: url, mu: &sync.Mutex{}, got: map[string][]string{}}
	sc := sim.Scenario{Name: "sentinel-remote-links", Instances: 1, Endpoints: 1, Duration: 40 * time.Second, Topology: sim.TopologySentinel,
		Steps: chaos.Schedule{
			{At: 10 * time.Second, For: 20 * time.Second, Fault: chaos.PrimaryIsolate{}, Jitter: -1},
			{At: 15 * time.Second, Fault: seen, Jitter: -1},
		}}
	res, err := sim.Run(context.Background(), sim.Options{System: baselines.Naive{}, Scenario: sc, Seed: 1, TimeScale: 0.1,
		Backend: "server", Toxiproxy: url})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors)
	require.Empty(t, res.CleanupErrors)

	seen.mu.Lock()
	defer seen.mu.Unlock()
	var peers, slots []string
	for name := range seen.got {
		require.True(t, strings.HasPrefix(name, "tenure-"), "a proxy named under the run's prefix: %s", name)
		switch {
		case strings.Contains(name, "-peer-"):
			peers = append(peers, name)
		case strings.Contains(name, "slot-"):
			slots = append(slots, name)
		}
	}
	sort.Strings(peers)
	require.Len(t, peers, 6, "one peer link per node (three data nodes, three sentinels) on the server: %v", seen.got)
	isolated := 0
	for _, p := range peers {
		if len(seen.got[p]) > 0 {
			isolated++
			require.True(t, strings.HasSuffix(p, "-peer-redis-0"), "the first primary is the one isolated: %s", p)
		}
	}
	require.Equal(t, 1, isolated, "the isolated primary's peer link carries the partition's toxics: %v", seen.got)
	require.NotEmpty(t, slots, "the instance's links are on the server too: %v", seen.got)

	left, err := toxiclient.NewClient(url).Proxies()
	require.NoError(t, err)
	require.Empty(t, left, "the run removes every proxy it created")
}
