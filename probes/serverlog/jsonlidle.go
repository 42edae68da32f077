package serverlog

import (
	"bytes"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// idleMarker is the last stage of WriteJSONL: it takes every record in
// input order, with the finding it encodes, and passes the records on in
// the same order, adding "idle_artifact":true to the throughput records of
// the points that the Aggregator drops as SGLang's idle artefact (the rule
// the cockpit's tok/s series uses).
//
// The Aggregator decides about the first point of a busy period only when
// the next point arrives (or at the end of input), so from the first
// Throughput of an undecided point on, records are held back, in order,
// until the decision; then they are passed on, marked where dropped. Held
// records are those between such a point and the next point (usually a
// few prefill lines); nothing is reordered. It sees the same sequence of
// findings whether the scan ran in parallel or line by line, so the output
// is the same byte for byte.
type idleMarker struct {
	agg   Aggregator
	rates []event.TokRate
	hold  []byte                            // records held back, in order
	tput  []heldRecord                      // the throughput records in hold
	out   func(records []byte, stable bool) // stable: records stay valid until the block ends
}

// heldRecord is a throughput record in idleMarker.hold: its line and where
// its encoding ends (after "}\n").
type heldRecord struct {
	line int
	end  int
}

func newIdleMarker(out func(records []byte, stable bool)) *idleMarker {
	m := &idleMarker{out: out}
	m.agg.track = true
	return m
}

// record takes the next record, enc, the encoding of p; stable says
// that enc stays valid until the end of its block (a worker's encoding).
func (m *idleMarker) record(p event.Payload, enc []byte, stable bool) {
	t, isTput := p.(event.Throughput)
	if isTput {
		m.rates = m.agg.Add(m.rates[:0], t)
	}
	m.pass(enc, stable, isTput, t.Line)
}

// recordPoint is record for a decode line of the fast path: p holds its
// Aggregator inputs, enc (stable) its record.
func (m *idleMarker) recordPoint(p *tputPoint, enc []byte) {
	if p.counts {
		m.rates = m.agg.add(m.rates[:0], true, p.key, p.stamp, p.line, p.tokS, p.accept, p.hasAccept)
	}
	m.pass(enc, true, true, p.line)
}

// pass passes enc on or holds it back; isTput says that it is the record
// of the Throughput of line that was just added.
func (m *idleMarker) pass(enc []byte, stable, isTput bool, line int) {
	if len(m.hold) == 0 && !m.agg.undecided() {
		m.out(enc, stable) // the usual case: nothing pending
		return
	}
	m.hold = append(m.hold, enc...)
	if isTput {
		m.tput = append(m.tput, heldRecord{line: line, end: len(m.hold)})
	}
	if !m.agg.undecided() {
		m.release()
	}
}

// flush decides what the end of input decides and passes everything on.
func (m *idleMarker) flush() {
	m.rates = m.agg.Flush(m.rates[:0])
	m.release()
}

// kwIdleArtifact is the field added to a dropped point's records.
var kwIdleArtifact = []byte(`,"idle_artifact":true}` + "\n")

// release passes the held records on, marking those of dropped points.
func (m *idleMarker) release() {
	if len(m.hold) == 0 {
		return
	}
	if len(m.agg.dropped) == 0 {
		m.out(m.hold, false)
	} else {
		out := make([]byte, 0, len(m.hold)+len(m.agg.dropped)*len(kwIdleArtifact))
		start := 0
		for _, r := range m.tput {
			if !containsInt(m.agg.dropped, r.line) {
				continue
			}
			rec := m.hold[start:r.end]
			// A record ends in "}\n": the field goes before the brace.
			if bytes.HasSuffix(rec, []byte("}\n")) {
				out = append(out, rec[:len(rec)-2]...)
				out = append(out, kwIdleArtifact...)
				start = r.end
			}
		}
		out = append(out, m.hold[start:]...)
		m.out(out, false)
	}
	m.hold, m.tput, m.agg.dropped = m.hold[:0], m.tput[:0], m.agg.dropped[:0]
}

func containsInt(v []int, x int) bool {
	for _, e := range v {
		if e == x {
			return true
		}
	}
	return false
}
