package chaos

import (
	"errors"
	"time"
)

// Fanout returns one Link that is all of links at once: every fault and Heal is applied to each, and
// the errors joined. It is how an instance of a multi-node backend, which has a link to every node,
// meets the instance faults (partition, latency, one-way, hold) on all its links together. Addr is the
// first link's.
func Fanout(links ...Link) Link { return fanout(links) }

type fanout []Link

func (f fanout) each(do func(Link) error) error {
	errs := make([]error, 0, len(f))
	for _, l := range f {
		errs = append(errs, do(l))
	}
	return errors.Join(errs...)
}

func (f fanout) Addr() string {
	if len(f) == 0 {
		return ""
	}
	return f[0].Addr()
}

func (f fanout) Partition() error   { return f.each(Link.Partition) }
func (f fanout) DropReplies() error { return f.each(Link.DropReplies) }
func (f fanout) EndHold() error     { return f.each(Link.EndHold) }
func (f fanout) Reset() error       { return f.each(Link.Reset) }
func (f fanout) Kill() error        { return f.each(Link.Kill) }
func (f fanout) Heal() error        { return f.each(Link.Heal) }
func (f fanout) Close() error       { return f.each(Link.Close) }

// observeHeld gives f to every link of the fanout that can take it (see ObserveHeld).
func (f fanout) observeHeld(fn func(Held)) bool {
	all := len(f) > 0
	for _, l := range f {
		all = ObserveHeld(l, fn) && all
	}
	return all
}

func (f fanout) Latency(latency, jitter time.Duration) error {
	return f.each(func(l Link) error { return l.Latency(latency, jitter) })
}

func (f fanout) Hold(requests bool, d time.Duration, match string) error {
	return f.each(func(l Link) error { return l.Hold(requests, d, match) })
}
