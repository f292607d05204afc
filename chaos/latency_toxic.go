package chaos

import (
	"math/rand"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// seededLatencyType is the toxic type name of seededLatency in toxiproxy's registry.
const seededLatencyType = "tenure_seeded_latency"

// seededLatency delays each chunk by latency ± jitter like toxiproxy's own latency toxic, but draws the
// jitter from a generator seeded from the run's seed (passed as an attribute) instead of the global one.
// Which chunk gets which draw still depends on goroutine scheduling: the sequence of delays is
// reproducible, their assignment to commands is not.
type seededLatency struct {
	Latency int64 `json:"latency"` // milliseconds
	Jitter  int64 `json:"jitter"`  // milliseconds
	Seed    int64 `json:"seed"`

	mu  sync.Mutex
	rng *rand.Rand
}

var registerOnce sync.Once

// registerSeededLatency registers the toxic type with toxiproxy, once per process.
func registerSeededLatency() {
	registerOnce.Do(func() { toxics.Register(seededLatencyType, new(seededLatency)) })
}

func (t *seededLatency) delay() time.Duration {
	d := t.Latency
	if t.Jitter > 0 {
		t.mu.Lock()
		if t.rng == nil {
			t.rng = rand.New(rand.NewSource(t.Seed))
		}
		d += t.rng.Int63n(2*t.Jitter+1) - t.Jitter
		t.mu.Unlock()
	}
	if d < 0 {
		d = 0
	}
	return time.Duration(d) * time.Millisecond
}

// Pipe forwards chunks after their delay; on interrupt it forwards what it holds, losing nothing.
func (t *seededLatency) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			wait := t.delay() - time.Since(c.Timestamp)
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
				c.Timestamp = c.Timestamp.Add(wait)
				stub.Output <- c
			case <-stub.Interrupt:
				timer.Stop()
				stub.Output <- c
				return
			}
		}
	}
}
