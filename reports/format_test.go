package reports

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNaturalOrder(t *testing.T) {
	in := []string{"ep-10", "ep-2", "ep-1", "b", "a", "ep-02", "ep-100"}
	sort.Slice(in, func(i, j int) bool { return naturalLess(in[i], in[j]) })
	require.Equal(t, []string{"a", "b", "ep-1", "ep-2", "ep-02", "ep-10", "ep-100"}, in)
}

func TestShortNames(t *testing.T) {
	require.Equal(t, []string{"i1", "i2"}, shortNames([]string{"i1", "i2"}))
	require.Equal(t, []string{"web1…b1c4", "web2…99aa"},
		shortNames([]string{"web1-1764108000123456789-3fa2b1c4", "web2-1764108000987654321-123499aa"}))
	// Same host everywhere: the random tail tells them apart.
	require.Equal(t, []string{"…3fa2b1c4", "…3fa9b1c4"},
		shortNames([]string{"host-1764108000123456789-3fa2b1c4", "host-1764108000987654321-3fa9b1c4"}))
	ids := []string{"host-1764108000123456789-aaaaaaaaaaaaaaaa", "host-1764108000123456789-baaaaaaaaaaaaaaa"}
	require.Equal(t, ids, shortNames(ids), "no abbreviation is unique: keep the IDs")
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	require.Equal(t, time.Duration(-1), percentile(nil, 50))
	require.Equal(t, 7*time.Millisecond, percentile(ms(7), 99))
	lat := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	require.Equal(t, 5*time.Millisecond, percentile(lat, 50))
	require.Equal(t, 10*time.Millisecond, percentile(lat, 99))
	require.True(t, slices.IsSorted(lat))
}

func TestFmtDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-1: "–", 0: "0", 250 * time.Microsecond: "250µs", 2500 * time.Microsecond: "2.5ms",
		120 * time.Millisecond: "120ms", 3210 * time.Millisecond: "3.21s", 45 * time.Second: "45s", 150 * time.Second: "150s",
	} {
		require.Equal(t, want, fmtDur(d), "%v", time.Duration(d))
	}
}

func TestRowLabelsNeverCollide(t *testing.T) {
	rows := make([]compactRow, 12)
	hot := map[int]bool{3: true, 4: true, 5: true, 9: true}
	for i := range rows {
		rows[i] = compactRow{eps: []int{i}}
	}
	isHot := func(r compactRow) bool { return hot[r.eps[0]] }
	thin := rowLabels(rows, 8, isHot)
	require.Equal(t, []int{1, 0, 0, 2, 0, 2, 0, 1, 0, 2, 0, 1}, thin)
	for i := 1; i < len(thin); i++ {
		require.False(t, thin[i] != 0 && thin[i-1] != 0, "rows %d and %d both labelled", i-1, i)
	}
	wide := rowLabels(rows, 12, isHot)
	require.Equal(t, []int{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 1, 1}, wide)
}

func TestBackendShort(t *testing.T) {
	for in, want := range map[string]string{
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d (private, 127.0.0.1:36513)": "redis-server 7.0.15",
		"redis-server 7.0.15 on 127.0.0.1:40123": "redis-server 7.0.15",
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d (private, 127.0.0.1:1, persistence rdb)":                                                                  "redis-server 7.0.15, persistence rdb",
		"Redis Cluster, 3 primaries and 3 replicas (cluster-node-timeout 1s)":                                                                                                                    "Redis Cluster, 3 primaries and 3 replicas",
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d independent nodes (private: 3 primaries, no replication)":                                                 "3 independent redis-server 7.0.15 nodes, no replication",
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d Sentinel set (private: 1 primary, 2 replicas, 3 sentinels, quorum 2, down-after 1s, failover-timeout 6s)": "Sentinel set of redis-server 7.0.15: 1 primary, 2 replicas, 3 sentinels",
		"PostgreSQL at 127.0.0.1:5432 (table tenure_sim_x); the harness's Redis: Redis server v=7.0.15 (private, 127.0.0.1:1)":                                                                   "PostgreSQL at 127.0.0.1:5432",
		"miniredis (embedded, 127.0.0.1:5)": "miniredis",
		"external Redis at 10.0.0.1:6379":   "external Redis at 10.0.0.1:6379",
		"embedded miniredis":                "embedded miniredis",
		"":                                  "",
	} {
		require.Equal(t, want, backendShort(in), in)
	}
}
