package sim

import (
	"context"
	"log/slog"
)

// onceKeys is a slog.Handler that writes each key once per line: a record attribute whose key the
// logger already carries (the harness gives each instance's logger its "instance", and systems often
// log it again) is left out.
type onceKeys struct {
	h    slog.Handler
	keys map[string]bool
	// grouped: after WithGroup the record's attributes live in a group and cannot clash.
	grouped bool
}

func newOnceKeys(h slog.Handler) slog.Handler { return &onceKeys{h: h, keys: map[string]bool{}} }

func (o *onceKeys) Enabled(ctx context.Context, l slog.Level) bool { return o.h.Enabled(ctx, l) }

func (o *onceKeys) Handle(ctx context.Context, r slog.Record) error {
	if o.grouped || len(o.keys) == 0 {
		return o.h.Handle(ctx, r)
	}
	nr := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	seen := map[string]bool{}
	r.Attrs(func(a slog.Attr) bool {
		if !o.keys[a.Key] && !seen[a.Key] {
			seen[a.Key] = true
			nr.AddAttrs(a)
		}
		return true
	})
	return o.h.Handle(ctx, nr)
}

func (o *onceKeys) WithAttrs(as []slog.Attr) slog.Handler {
	n := &onceKeys{h: o.h.WithAttrs(as), keys: map[string]bool{}, grouped: o.grouped}
	for k := range o.keys {
		n.keys[k] = true
	}
	if !o.grouped {
		for _, a := range as {
			n.keys[a.Key] = true
		}
	}
	return n
}

func (o *onceKeys) WithGroup(name string) slog.Handler {
	return &onceKeys{h: o.h.WithGroup(name), keys: o.keys, grouped: o.grouped || name != ""}
}
