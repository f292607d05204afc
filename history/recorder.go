package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"
)

// Recorder collects the events of one run. It is safe for concurrent use. Times come from the function
// passed to NewRecorder, so tests can drive it by hand.
type Recorder struct {
	since func() time.Duration

	mu     sync.Mutex
	seq    int64
	events []Event

	cmu     sync.Mutex
	counted map[string]map[string]int64 // instance -> command -> count (see Meta.Counted)
}

// NewRecorder returns a recorder whose clock is since: the time elapsed since the start of the run on
// the harness's monotonic clock.
func NewRecorder(since func() time.Duration) *Recorder {
	return &Recorder{since: since}
}

// NewRecorderFrom returns a recorder that measures time from start on the real monotonic clock.
func NewRecorderFrom(start time.Time) *Recorder {
	return NewRecorder(func() time.Duration { return time.Since(start) })
}

// NewStrictRecorderFrom returns a recorder that measures time from start, strictly increasing: a
// reading taken at the same instant as the one before it is 1 ns later. A real clock never reads the
// same nanosecond twice across a reply received and the next request sent; a virtual-time clock, which
// stands still while code runs, always does, and the order of two such events (a release answered, an
// acquire sent after it) would be lost. Readings keep the order in which they were taken, and stay
// within a nanosecond per reading of the same instant of the clock itself.
func NewStrictRecorderFrom(start time.Time) *Recorder {
	var mu sync.Mutex
	var last time.Duration
	return NewRecorder(func() time.Duration {
		now := time.Since(start)
		mu.Lock()
		defer mu.Unlock()
		if now <= last {
			now = last + 1
		}
		last = now
		return now
	})
}

// Now returns the recorder's current time.
func (r *Recorder) Now() time.Duration { return r.since() }

// Add appends e, assigning its Seq, and returns the Seq.
func (r *Recorder) Add(e Event) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	e.Seq = r.seq
	r.events = append(r.events, e)
	return e.Seq
}

// SetLanded sets Op.Landed on the operation recorded with Seq seq: when its command reached the
// backend, which the harness may learn only after the operation was recorded (a request held on the
// wire lands after its caller gave up on it). It is the one change a recorded event takes. The event
// gets a new Op, so copies that Events returned before are not changed under their readers. It
// reports false when no operation has that Seq.
func (r *Recorder) SetLanded(seq int64, landed time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := int(seq - 1) // Add appends in Seq order, from 1
	if i < 0 || i >= len(r.events) || r.events[i].Seq != seq {
		i = sort.Search(len(r.events), func(k int) bool { return r.events[k].Seq >= seq })
		if i == len(r.events) || r.events[i].Seq != seq {
			return false
		}
	}
	e := &r.events[i]
	if e.Op == nil {
		return false
	}
	op := *e.Op
	op.Landed = landed
	e.Op = &op
	return true
}

// Count adds n to the count of command for instance: commands counted instead of recorded one event
// each (see Meta.Counted).
func (r *Recorder) Count(instance, command string, n int64) {
	if n == 0 {
		return
	}
	r.cmu.Lock()
	defer r.cmu.Unlock()
	if r.counted == nil {
		r.counted = map[string]map[string]int64{}
	}
	byCmd := r.counted[instance]
	if byCmd == nil {
		byCmd = map[string]int64{}
		r.counted[instance] = byCmd
	}
	byCmd[command] += n
}

// Counted returns a copy of the counts so far (nil when nothing was counted).
func (r *Recorder) Counted() map[string]map[string]int64 {
	r.cmu.Lock()
	defer r.cmu.Unlock()
	if len(r.counted) == 0 {
		return nil
	}
	out := make(map[string]map[string]int64, len(r.counted))
	for in, byCmd := range r.counted {
		c := make(map[string]int64, len(byCmd))
		for k, v := range byCmd {
			c[k] = v
		}
		out[in] = c
	}
	return out
}

// Events returns a copy of the events so far, sorted by At (then Seq).
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	out := make([]Event, len(r.events))
	copy(out, r.events)
	r.mu.Unlock()
	Sort(out)
	return out
}

// Len returns the number of events recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Sort orders events by At, then Seq.
func Sort(events []Event) {
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].At != events[j].At {
			return events[i].At < events[j].At
		}
		return events[i].Seq < events[j].Seq
	})
}

// History is a header and its events, as saved.
type History struct {
	Meta   Meta
	Events []Event
}

// Write writes h as JSON Lines: the Meta header first, then one event per line.
func Write(w io.Writer, h History) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	meta := h.Meta
	if meta.Schema == 0 {
		meta.Schema = SchemaVersion
	}
	if err := enc.Encode(meta); err != nil {
		return fmt.Errorf("history: write header: %w", err)
	}
	for i := range h.Events {
		if err := enc.Encode(&h.Events[i]); err != nil {
			return fmt.Errorf("history: write event %d: %w", h.Events[i].Seq, err)
		}
	}
	return bw.Flush()
}

// WriteFile saves h to path.
func WriteFile(path string, h History) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	return Write(f, h)
}

// ErrSchema is returned for a history written by a newer, incompatible version.
var ErrSchema = errors.New("history: unsupported schema version")

// Read parses a history written by Write. Events are returned sorted by At.
func Read(r io.Reader) (History, error) {
	var h History
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		if line == 1 {
			if err := json.Unmarshal(b, &h.Meta); err != nil {
				return h, fmt.Errorf("history: line 1 (header): %w", err)
			}
			if h.Meta.Schema > SchemaVersion {
				return h, fmt.Errorf("%w %d (this build reads up to %d): re-check with a newer simrun", ErrSchema, h.Meta.Schema, SchemaVersion)
			}
			continue
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return h, fmt.Errorf("history: line %d: %w", line, err)
		}
		h.Events = append(h.Events, e)
	}
	if err := sc.Err(); err != nil {
		return h, fmt.Errorf("history: line %d: %w", line+1, err)
	}
	if line == 0 {
		return h, errors.New("history: empty file: expected a header line")
	}
	Sort(h.Events)
	return h, nil
}

// ReadFile loads a history saved by WriteFile.
func ReadFile(path string) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return History{}, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	h, err := Read(f)
	if err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}
