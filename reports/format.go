package reports

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// esc escapes text for HTML, SVG and XML alike (no named entities beyond the XML ones).
func esc(s string) string { return html.EscapeString(s) }

// palette holds instance colours, chosen to stay apart from the red of violation markers and from the
// grey of "no holder".
var palette = []string{
	"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948",
	"#76b7b2", "#9c755f", "#ff9da7", "#1f3d7a", "#8f9c2f",
	"#a0cbe8", "#d4a373",
}

// instanceColor returns the colour of the i-th instance; beyond the palette, hues step by the golden
// angle so neighbours stay distinguishable.
func instanceColor(i int) string {
	if i < len(palette) {
		return palette[i]
	}
	h := math.Mod(float64(i)*137.508, 360)
	return fmt.Sprintf("hsl(%.0f,55%%,50%%)", h)
}

// shortNames abbreviates instance IDs for labels, keeping them unique. IDs of the form
// host-bootNanos-random become "host…abcd" (the host and the end of the random part); an ID that is short
// enough is kept whole, and any abbreviation that would collide falls back to the full ID.
func shortNames(ids []string) []string {
	forms := []func(string) string{
		func(id string) string { return id },
		func(id string) string {
			head, _, _ := strings.Cut(id, "-")
			if r := []rune(head); len(r) > 10 {
				head = string(r[:10])
			}
			return head + "…" + tail(id, 4)
		},
		func(id string) string { return "…" + tail(id, 8) },
		func(id string) string { return "…" + tail(id, 12) },
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id
		if len([]rune(id)) <= 16 {
			continue
		}
		for _, f := range forms[1:] {
			if unique(f, ids) {
				out[i] = f(id)
				break
			}
		}
	}
	return out
}

func tail(s string, n int) string {
	r := []rune(s)
	return string(r[max(len(r)-n, 0):])
}

// unique reports whether f maps ids to distinct strings.
func unique(f func(string) string, ids []string) bool {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		k := f(id)
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// fmtDur formats a run time or latency with about three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "–"
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return trimZeros(fmt.Sprintf("%.2f", float64(d)/1e6)) + "ms"
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/1e6)
	case d < 10*time.Second:
		return trimZeros(fmt.Sprintf("%.2f", d.Seconds())) + "s"
	case d < 100*time.Second:
		return trimZeros(fmt.Sprintf("%.1f", d.Seconds())) + "s"
	default:
		return fmt.Sprintf("%.0fs", d.Seconds())
	}
}

// fmtAt formats a run time precisely (milliseconds), for tables and excerpts.
func fmtAt(d time.Duration) string {
	if d < 0 {
		return "–"
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// niceStep returns a 1-2-5 step close to span/n.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// sortedNatural returns the keys of set in natural order ("ep-2" before "ep-10").
func sortedNatural(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i], out[j]) })
	return out
}

// naturalLess compares strings treating runs of digits as numbers.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da > 0 && db > 0 {
			na, _ := strconv.ParseUint(a[:da], 10, 64)
			nb, _ := strconv.ParseUint(b[:db], 10, 64)
			if na != nb {
				return na < nb
			}
			if da != db {
				return da < db
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitPrefix(s string) int {
	n := 0
	for n < len(s) && n < 18 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// oneLine flattens a message to a single line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
