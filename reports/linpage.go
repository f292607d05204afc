package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
)

// metaRE reads the checker's description of an operation in the visualization: "seq 35: <instance> on
// <key>: ...".
var metaRE = regexp.MustCompile(`^seq \d+: (\S+) on (\S+?)(?::\s|$)`)

// faultMetaRE reads its description of a backend wipe: "seq 12: fault f1 redis-restart".
var faultMetaRE = regexp.MustCompile(`^seq \d+: fault \S+`)

// decorateLinearizability gives porcupine's page its context: a header with the run's name, seed and
// verdicts and a link back to report.html; clients named by instance and operations labelled with their
// endpoint. Porcupine's interactivity is kept: only its data and one label line are rewritten, and when
// the page does not have the expected shape it is returned with the header alone.
func decorateLinearizability(page []byte, m *model) []byte {
	out := page
	if b, ok := relabelClients(page, m); ok {
		out = b
	}
	i := bytes.Index(out, []byte("<body>"))
	if i < 0 {
		return out
	}
	i += len("<body>")
	var res checker.Result
	for _, r := range m.results {
		if r.res.Invariant == checker.InvLinearizable {
			res = r.res
		}
	}
	verdict := m.verdict().Word
	lin := string(res.Outcome)
	if lin == "" {
		lin = "not checked"
	}
	var h strings.Builder
	// Porcupine's legend is fixed at the top: the header goes below it and stays in view when the
	// timeline is scrolled sideways.
	fmt.Fprintf(&h, `<style>#canvas { margin-top: 8px; }</style>`+
		`<header style="font: 14px/1.45 system-ui, sans-serif; margin-top: 40px; padding: 6px 10px; border-bottom: 1px solid #ddd; position: sticky; left: 0; width: calc(100vw - 40px)">`+
		`<div><b>%s</b> · system %s · seed %d · run %s · linearizability <b>%s</b> · <a href="%s">back to the report</a></div>`+
		`<div style="color:#555; font-size: 12.5px">%s Rows are clients, named by instance; each operation is labelled with its %s; faults and lifecycle changes are the rows below the line. Click an operation to see its linearization.</div></header>`,
		esc(m.meta.Scenario), esc(m.meta.System), m.meta.Seed, verdict, esc(lin), FileReport, esc(strings.TrimSuffix(m.humanize(res.Message), ".")+"."), m.epWord())
	return append(append(append([]byte{}, out[:i]...), h.String()...), out[i:]...)
}

// relabelClients rewrites porcupine's data so that operations read "ep-3: acquire(i0…0442, 3s) -> ok"
// and client rows carry instance names.
func relabelClients(page []byte, m *model) ([]byte, bool) {
	const decl = "const data = "
	i := bytes.Index(page, []byte(decl))
	if i < 0 {
		return nil, false
	}
	start := i + len(decl)
	dec := json.NewDecoder(bytes.NewReader(page[start:]))
	dec.UseNumber()
	var data map[string]any
	if err := dec.Decode(&data); err != nil {
		return nil, false
	}
	end := start + int(dec.InputOffset())
	names := map[int]string{}
	epOfKey := map[string]string{}
	for i := range m.ev {
		if e := &m.ev[i]; e.Op != nil && e.Endpoint != "" {
			epOfKey[e.Op.Key] = e.Endpoint
		}
	}
	if annots, ok := data["Annotations"].([]any); ok {
		for _, a := range annots {
			if am, ok := a.(map[string]any); ok {
				for _, f := range []string{"Description", "Details"} {
					if d, ok := am[f].(string); ok {
						am[f] = m.humanize(d)
					}
				}
			}
		}
	}
	parts, _ := data["Partitions"].([]any)
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		// States name expiries to the nanosecond; to the millisecond (Redis's expiry tick) they stay exact
		// enough to tell one linearization from another and read as the rest of the page does.
		lins, _ := pm["PartialLinearizations"].([]any)
		for _, lin := range lins {
			steps, _ := lin.([]any)
			for _, st := range steps {
				if sm, ok := st.(map[string]any); ok {
					if d, ok := sm["StateDescription"].(string); ok {
						sm["StateDescription"] = m.shortenIDs(roundDurationsTo(d, time.Millisecond))
					}
				}
			}
		}
		hist, _ := pm["History"].([]any)
		for _, el := range hist {
			em, _ := el.(map[string]any)
			meta, _ := em["Metadata"].(string)
			sm := metaRE.FindStringSubmatch(meta)
			if sm == nil {
				// A wipe of the backend (a restart that lost the data) is an operation of a client of
				// its own, which has no instance to be named after.
				if faultMetaRE.MatchString(meta) {
					if id, err := em["ClientId"].(json.Number).Int64(); err == nil {
						names[int(id)] = "backend"
					}
					em["Metadata"] = m.humanize(meta)
				}
				continue
			}
			inst, key := sm[1], sm[2]
			if id, err := em["ClientId"].(json.Number).Int64(); err == nil {
				if k, ok := m.instIdx[inst]; ok {
					names[int(id)] = m.insts[k].short
				} else {
					names[int(id)] = inst
				}
			}
			label := key
			if ep, ok := epOfKey[key]; ok {
				label = ep
			}
			if d, ok := em["Description"].(string); ok {
				em["Description"] = label + ": " + m.humanize(d)
			}
			em["Metadata"] = m.humanize(meta)
		}
	}
	nb, err := json.Marshal(data)
	if err != nil {
		return nil, false
	}
	nameJSON, err := json.Marshal(names)
	if err != nil {
		return nil, false
	}
	out := append([]byte{}, page[:start]...)
	out = append(out, nb...)
	out = append(out, page[end:]...)
	// Client labels: porcupine writes the client's number; give it the instance's name.
	const label = "text.textContent = i < realClients ? i : sortedTags[i - realClients]"
	if bytes.Contains(out, []byte(label)) {
		repl := "text.textContent = i < realClients ? (tenureClientNames[i] ?? i) : sortedTags[i - realClients]"
		out = bytes.Replace(out, []byte(label), []byte(repl), 1)
		j := bytes.Index(out, []byte(decl))
		inject := fmt.Sprintf("const tenureClientNames = %s\n      ", nameJSON)
		out = append(out[:j], append([]byte(inject), out[j:]...)...)
	}
	return out, true
}
