package checker

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/tenurelabs/tenure/history"
)

// ErrVisualize wraps failures to produce or write the linearizability visualization.
var ErrVisualize = errors.New("checker: linearizability visualization")

// VisualizeLinearizability writes porcupine's HTML visualization of h's lease operations to w: one
// partition per key, each instance a client row (the last row is the backend's wipes), the longest
// (partial) linearization found, and every fault window as an annotation on a "fault" row, lifecycle
// changes as point annotations on a "lifecycle" row. It is written whatever the verdict, including when
// the search times out (opts.LinearizabilityTimeout), in which case it shows the partial linearizations
// found so far. Times are nanoseconds of run time.
func VisualizeLinearizability(w io.Writer, h history.History, opts Options) error {
	opts = opts.withDefaults()
	idx := newIndex(h)
	lh := buildLeaseHistory(idx)
	var ops []porcupine.Operation
	for _, k := range lh.keys {
		ops = append(ops, k.ops...)
	}
	model := leaseModel()
	model.DescribeOperationMetadata = func(info any) string {
		seq, ok := info.(int64)
		if !ok {
			return ""
		}
		e := lh.bySeq[seq]
		if e == nil {
			return fmt.Sprintf("seq %d", seq)
		}
		if e.Kind == history.KindFault {
			return fmt.Sprintf("seq %d: fault %s %s", seq, e.Fault.ID, e.Fault.Name)
		}
		s := fmt.Sprintf("seq %d: %s on %s", seq, e.Instance, e.Op.Key)
		if e.Op.Command != "" {
			s += ": " + e.Op.Command
		}
		if e.Op.Err != "" {
			s += " (error: " + e.Op.Err + ")"
		}
		return s
	}
	_, info := porcupine.CheckOperationsVerbose(model, ops, opts.LinearizabilityTimeout)
	info.AddAnnotations(annotations(idx))
	if err := porcupine.Visualize(model, info, w); err != nil {
		return fmt.Errorf("%w: %w", ErrVisualize, err)
	}
	return nil
}

// annotations turns fault windows and lifecycle changes into porcupine annotations.
func annotations(idx *index) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, f := range idx.faults {
		end := f.End
		if end < f.At || end == history.Infinity {
			end = idx.end
		}
		desc := f.Fault.ID + " " + f.Fault.Name
		var details []string
		if len(f.Fault.Targets) > 0 {
			details = append(details, "targets: "+strings.Join(f.Fault.Targets, ", "))
		} else {
			details = append(details, "targets: backend / every instance")
		}
		keys := make([]string, 0, len(f.Fault.Params))
		for k := range f.Fault.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			details = append(details, k+"="+f.Fault.Params[k])
		}
		if f.Fault.Wipes {
			details = append(details, "wipes the backend")
		}
		if f.Fault.Removes {
			details = append(details, "removes its targets")
		}
		details = append(details, fmt.Sprintf("%v..%v", f.At, end))
		out = append(out, porcupine.Annotation{Tag: "fault", Start: int64(f.At), End: int64(end),
			Description: desc, Details: strings.Join(details, "; "), BackgroundColor: "#f7c6c6"})
	}
	for _, l := range idx.lifecycle {
		out = append(out, porcupine.Annotation{Tag: "lifecycle", Start: int64(l.At),
			Description: fmt.Sprintf("%s %s", l.Instance, l.Lifecycle.Change),
			Details:     fmt.Sprintf("seq %d at %v", l.Seq, l.At), BackgroundColor: "#d8e6f7"})
	}
	return out
}
