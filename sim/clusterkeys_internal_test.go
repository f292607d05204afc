package sim

import (
	"testing"

	"github.com/tenurelabs/tenure/history"
)

// The recorder finds the endpoint in a lease key of either layout of the reference (lease.KeyLayout):
// <prefix>lease:<endpoint>, and <prefix>lease:{<endpoint>} whose hash tag keeps an endpoint's keys in
// one Redis Cluster slot. Histories of both classify to the same endpoints.
func TestEndpointOfBothKeyLayouts(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"poll:lease:ep-1":          "ep-1",
		"poll:lease:{ep-1}":        "ep-1",
		"run-7:poll:lease:{ep-1}":  "ep-1",
		"election:{role-a}:leader": "role-a",
		"poll:fence:{ep-1}":        "",
		"poll:epoch:{ep-1}":        "",
	} {
		if got := endpointOf(key); got != want {
			t.Errorf("endpointOf(%q) = %q, want %q", key, got, want)
		}
	}
	args := []any{"evalsha", "0123", 3, "poll:lease:{ep-1}", "poll:fence:{ep-1}", "poll:epoch:{ep-1}", "a:1", 3000, 86400000, 86400000}
	if got := endpointOf(keyOf(args)); got != "ep-1" {
		t.Errorf("endpoint of a cluster-layout acquire = %q, want ep-1", got)
	}
}

// A shard fault aimed at an endpoint hits the shard of the key the system keeps its lease in: the newest
// acquire or renewal of that endpoint names it, whatever the system's key layout (a baseline's
// "poll:lease:ep-0" hashes to another slot than the reference's "{ep-0}"). Reads, other endpoints and
// other kinds of operation do not count.
func TestLeaseKeyOfTheNewestGrantOrRenewal(t *testing.T) {
	t.Parallel()
	op := func(endpoint string, kind history.OpKind, key string) history.Event {
		return history.Event{Kind: history.KindOp, Endpoint: endpoint, Op: &history.Op{Kind: kind, Key: key}}
	}
	events := []history.Event{
		op("ep-0", history.OpAcquire, "poll:lease:ep-0"),
		op("ep-0", history.OpRenew, "poll:lease:ep-0"),
		op("ep-0", history.OpRead, "other:ep-0"),
		op("ep-1", history.OpAcquire, "poll:lease:ep-1"),
		{Kind: history.KindNote, Note: "promotion"},
	}
	if got := leaseKeyOf(events, "ep-0"); got != "poll:lease:ep-0" {
		t.Errorf("leaseKeyOf(ep-0) = %q, want poll:lease:ep-0", got)
	}
	if got := leaseKeyOf(events, "ep-2"); got != "" {
		t.Errorf("leaseKeyOf(ep-2) = %q, want none", got)
	}
}
