package sim

import "testing"

// The recorder finds the endpoint in a lease key of either layout of the reference (lease.KeyLayout):
// <prefix>lease:<endpoint>, and <prefix>lease:{<endpoint>} whose hash tag keeps an endpoint's keys in
// one Redis Cluster slot. Histories of both classify to the same endpoints.
func TestEndpointOfBothKeyLayouts(t *testing.T) {
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
