package journal

// The reader's side of format v2's log batches: their chains of lines
// (each decodes after the batches since its key) and the events derived
// from them, which are entries of their own sharing the batch's line.

import (
	"fmt"
	"slices"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// indexLinesV2 indexes v2 log-lines data el (split, flags first) as
// entry e at idx: its chain, its line count and the events derived from
// it (j.derKinds, j.derAux: added as entries after it).
func (j *Journal) indexLinesV2(e *entry, idx int32, el [][]byte) {
	flags, ok := parseInt(el[0])
	if !ok || flags < 0 || flags > logFlagKey|logFlagDerived {
		return // undecodable: counted when decoded
	}
	n := len(el) - 1
	if flags&logFlagKey != 0 {
		j.lastLogKey, j.lastLog = idx, -1
		n -= 2
	}
	if flags&logFlagDerived != 0 {
		n--
	}
	e.aux = uint64(max(n, 0))
	e.key = j.lastLogKey
	if j.lastLog >= 0 && j.entries[j.lastLog].key == e.key {
		e.link = j.lastLog
	}
	j.lastLog = idx
	var kok bool
	if j.derKinds, j.derAux, kok = derivedKinds(el, j.derKinds[:0], j.derAux[:0], j.unknownDerived); !kok {
		j.derKinds, j.derAux = j.derKinds[:0], j.derAux[:0]
	}
}

// decodeEntry decodes entry i with decoder state st: a v2 log-lines line
// after the lines of its chain that st has not seen (primeLog), an event
// derived from a log line from that line.
func (j *Journal) decodeEntry(i int, st *decState) (event.Event, error) {
	e := j.entries[i]
	if e.sub > 0 {
		p := int(e.key)
		at := j.h.Created.Add(e.t.Duration()).Local()
		if !st.log.has || st.log.last != e.key {
			// A tok/s point or an event stored whole reads from its
			// own item, without the lines (CatchUp keeps every point of
			// an open experiment: their batches are not decoded).
			if d, ok := j.derivedItem(i); ok {
				return event.Event{At: at, Data: d}, nil
			}
			if _, err := j.decodeEntry(p, st); err != nil {
				return event.Event{}, err
			}
		}
		if int(e.sub) > len(st.log.derived) {
			return event.Event{}, fmt.Errorf("line at byte %d: derived event %d of %d: %w", e.off, e.sub, len(st.log.derived), errSyntax)
		}
		return event.Event{At: at, Data: st.log.derived[e.sub-1]}, nil
	}
	if e.kind != logLinesID || e.key < 0 {
		return j.decodeRaw(i, st)
	}
	j.primeLog(i, st)
	ev, err := j.decodeRaw(i, st)
	if err != nil {
		st.log.has, st.log.last = false, -1
		return ev, err
	}
	st.log.key, st.log.last = e.key, int32(i)
	return ev, nil
}

// unknownDerived counts an item of an unknown kind on a log line (its
// name, quoted) in Problems.Unknown.
func (j *Journal) unknownDerived(name []byte) {
	kind, ok := parseString(name)
	if !ok {
		kind = string(name)
	}
	j.probs.Unknown++
	if len(j.probs.UnknownKinds) < maxUnknownKinds && !slices.Contains(j.probs.UnknownKinds, kind) {
		j.probs.UnknownKinds = append(j.probs.UnknownKinds, kind)
	}
}

// derivedItem decodes the item of derived entry i when it does not refer
// to a line (a tok/s point, or an event's data); ok is false otherwise or
// when it does not decode (the caller decodes the batch then).
func (j *Journal) derivedItem(i int) (event.Payload, bool) {
	e := j.entries[i]
	if e.kind == throughputID {
		return nil, false // usually a reference
	}
	fr, ok := splitFrame(j.data[e.off : e.off+int64(e.n)])
	if !ok {
		return nil, false
	}
	el, err := splitArray(fr.data, j.scratch[:0])
	if err != nil || len(el) < 2 {
		return nil, false
	}
	j.scratch = el[:0]
	var arr [16][]byte
	items, err := splitArray(el[len(el)-1], arr[:0])
	if err != nil {
		return nil, false
	}
	k := 0 // the item's index among the items, kind names skipped
	for x := 0; x < len(items); x++ {
		it := items[x]
		named := it[0] == '"'
		if named {
			if x+1 >= len(items) {
				return nil, false
			}
			x++
			if string(it) != `"throughput"` && string(it) != `"prefill"` {
				continue // a newer writer's kind: not an entry
			}
		}
		k++
		if k < int(e.sub) {
			continue
		}
		switch {
		case it[0] == '[':
			p, err := decRate(nil, time.Time{}, it)
			return p, err == nil
		case named && string(it) == `"prefill"` && items[x][0] == '{':
			p, err := decPrefill(nil, time.Time{}, items[x])
			return p, err == nil
		}
		return nil, false
	}
	return nil, false
}

var (
	throughputID = event.KindThroughput
	prefillID    = event.KindPrefill
)

// primeLog brings st's log state to just before v2 log-lines entry i by
// decoding the lines of its chain that it lacks.
func (j *Journal) primeLog(i int, st *decState) {
	e := j.entries[i]
	if e.key == int32(i) {
		return // a key: it sets the state itself
	}
	if st.log.has && st.log.key == e.key && st.log.last == e.link {
		return
	}
	from := int(e.key)
	if st.log.has && st.log.key == e.key && st.log.last >= e.key && st.log.last < int32(i) {
		from = int(st.log.last) + 1
	} else {
		st.log.has, st.log.last = false, -1
	}
	for k := from; k < i; k++ {
		x := j.entries[k]
		if x.kind != logLinesID || x.sub > 0 || x.key != e.key {
			continue
		}
		if _, err := j.decodeRaw(k, st); err != nil {
			st.log.has, st.log.last = false, -1
			return
		}
		st.log.key, st.log.last = e.key, int32(k)
	}
}
