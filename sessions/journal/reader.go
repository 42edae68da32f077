package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// entry indexes one event line.
type entry struct {
	off  int64      // of the line's first byte
	n    int32      // line length without "\n"
	kind event.Kind // never 0: unknown kinds are not indexed
	key  int32      // gpu-sample: the entry index of its keyframe (its own when it is one); -1 none
	t    micros     // the line's time
	max  micros     // the running maximum of t up to this entry
	// aux is what CatchUp needs without decoding: for gpu-sample the set
	// of GPU indices present (bit i for index i < 63; bit 63 for any
	// other), for log-lines the number of lines, for tok-rate 1 when
	// Dropped.
	aux uint64
	// sub is 0 for a line's own event; k > 0 for the k-th event derived
	// from the v2 log-lines line of entry key (it shares that line).
	sub uint16
	// link is, for a v2 log-lines entry, the log-lines entry before it
	// in its key's chain (-1 for the key itself).
	link int32
}

// Mark is a point of interest for the replay's [ and ] keys: an
// experiment's start or end, a note, or the start of another cockpit
// session appending to the journal.
type Mark struct {
	T    time.Duration // event time since the start (running maximum)
	Kind event.Kind    // event.KindExperimentStart, KindExperimentEnd, KindNote or KindSession
	Exp  string        // the experiment id ("" for a note outside one, and for a session)
	// Text is the experiment's name (start), its conclusion or trigger
	// (end), the note, or who recorded the session (DescribeSession).
	Text string
}

// Journal is an opened journal: its header and an index of every event
// line, decoded on demand. It is not safe for concurrent use.
type Journal struct {
	path string
	f    *os.File
	h    event.SessionHeader

	data       []byte // the file's bytes read so far
	indexed    int64  // end of the last complete line consumed
	lines      int    // lines consumed, the header included
	entries    []entry
	probs      Problems
	marks      []Mark
	lastKey    int32 // the latest gpu-sample keyframe entry, -1 none
	lastLogKey int32 // the latest v2 log-lines key entry, -1 none
	lastLog    int32 // the latest v2 log-lines entry, -1 none
	derKinds   []event.Kind
	derAux     []uint64

	cache decState // decoder state of random access (seek)
	// cacheKey is the keyframe entry whose rows cache holds, -1 none.
	cacheKey int32
	bad      map[int32]bool // entries that did not decode, counted once

	scratch     [][]byte   // splitArray's
	gpuEverMask uint64     // GPU indices seen in all samples indexed
	gpuEver     []everMark // where gpuEverMask grew
	markIdx     []int32    // the entry of each of marks
	seek        seekCache
}

// undecodable counts entry i in Problems.Undecodable, once.
func (j *Journal) undecodable(i int) {
	if j.bad == nil {
		j.bad = make(map[int32]bool)
	}
	if !j.bad[int32(i)] {
		j.bad[int32(i)] = true
		j.probs.Undecodable++
	}
}

// Open reads the journal at path and indexes every line in one pass,
// without decoding the events. Errors: one wrapping ErrNotJournal (no
// header, another format), a *VersionError (newer format), or the I/O
// error. Damaged lines are skipped and reported by Problems.
func Open(path string) (*Journal, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{path: path, f: f, lastKey: -1, cacheKey: -1, lastLogKey: -1, lastLog: -1}
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		j.data = make([]byte, 0, st.Size()+4096)
		// About 70 bytes a line in the demo's journal: no regrowth of
		// the index for most files.
		j.entries = make([]entry, 0, st.Size()/64+16)
	}
	if err := j.readMore(); err != nil {
		f.Close()
		return nil, err
	}
	i := bytes.IndexByte(j.data, '\n')
	if i < 0 {
		f.Close()
		if len(j.data) == 0 {
			return nil, fmt.Errorf("%s: %w (empty file)", path, ErrNotJournal)
		}
		if _, err := parseHeader(path, j.data); err != nil && !errors.Is(err, ErrNotJournal) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w (no complete header line)", path, ErrNotJournal)
	}
	h, err := parseHeader(path, j.data[:i])
	if err != nil {
		f.Close()
		return nil, err
	}
	h.Created = h.Created.UTC()
	j.h = h
	j.indexed, j.lines = int64(i+1), 1
	j.cache.created = h.Created
	j.index()
	return j, nil
}

// readMore appends the file's bytes beyond j.data.
func (j *Journal) readMore() error {
	for {
		if len(j.data) == cap(j.data) {
			j.data = slices.Grow(j.data, max(4096, len(j.data)/2))
		}
		n, err := j.f.ReadAt(j.data[len(j.data):cap(j.data)], int64(len(j.data)))
		j.data = j.data[:len(j.data)+n]
		if err == io.EOF || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
}

// index consumes the complete lines after j.indexed.
func (j *Journal) index() {
	data := j.data
	pos := j.indexed
	for {
		nl := bytes.IndexByte(data[pos:], '\n')
		if nl < 0 {
			break
		}
		line := data[pos : pos+int64(nl)]
		j.lines++
		j.indexLine(pos, line)
		pos += int64(nl) + 1
	}
	j.indexed = pos
	tail := data[pos:]
	// Only an incomplete last line (no "\n": a crash mid-write, or a line
	// being written now) is torn; a complete line that does not parse,
	// last or not, is garbled.
	j.probs.Torn, j.probs.TornBytes = false, 0
	if len(bytes.TrimSpace(tail)) > 0 {
		j.probs.Torn, j.probs.TornBytes = true, len(tail)
	}
}

func (j *Journal) garbled(line int) {
	j.probs.Garbled++
	if j.probs.FirstGarbled == 0 {
		j.probs.FirstGarbled = line
	}
}

// indexLine indexes one complete line (without "\n") at offset off.
func (j *Journal) indexLine(off int64, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		j.probs.Blank++
		return
	}
	fr, ok := splitFrame(line)
	if !ok {
		j.garbled(j.lines)
		return
	}
	id := kindIDs[string(fr.kind)]
	// The compact arrays are split once: what the index reads of them,
	// and their check.
	var el [][]byte
	switch id {
	case gpuSampleID, logLinesID:
		var err error
		if el, err = splitArray(fr.data, j.scratch[:0]); err != nil || len(el) == 0 {
			j.garbled(j.lines)
			return
		}
		j.scratch = el[:0]
	default:
		if !wellFormed(id, fr.data) {
			j.garbled(j.lines)
			return
		}
	}
	if id == 0 {
		j.probs.Unknown++
		if len(j.probs.UnknownKinds) < maxUnknownKinds && !slices.Contains(j.probs.UnknownKinds, string(fr.kind)) {
			j.probs.UnknownKinds = append(j.probs.UnknownKinds, string(fr.kind))
		}
		return
	}
	e := entry{off: off, n: int32(len(line)), kind: id, key: -1, t: fr.t, max: fr.t, link: -1}
	if n := len(j.entries); n > 0 && j.entries[n-1].max > e.max {
		e.max = j.entries[n-1].max
	}
	idx := int32(len(j.entries))
	switch id {
	case gpuSampleID:
		if isKeyframe(fr.data) {
			j.lastKey = idx
		}
		e.key = j.lastKey
		e.aux = gpuPresent(el)
		if e.aux&^j.gpuEverMask != 0 {
			j.gpuEverMask |= e.aux
			j.gpuEver = append(j.gpuEver, everMark{idx: idx, mask: j.gpuEverMask})
		}
	case logLinesID:
		if len(el[0]) > 0 && el[0][0] != '"' {
			j.indexLinesV2(&e, idx, el)
		} else if len(el) >= 2 {
			e.aux = uint64(len(el) - 2)
		}
	case logResetID:
		e.aux = 1
	case tokRateID:
		if p, err := decRate(nil, time.Time{}, fr.data); err == nil {
			r := p.(event.TokRate)
			if r.Dropped {
				e.aux |= rateDropped
			}
			if !isFinite(r.TokPerSec) {
				e.aux |= rateNotFinite
			}
		}
	}
	j.entries = append(j.entries, e)
	for k, kind := range j.derKinds {
		j.entries = append(j.entries, entry{off: e.off, n: e.n, kind: kind, key: idx, t: e.t, max: e.max, aux: j.derAux[k], sub: uint16(k + 1), link: -1})
	}
	j.derKinds, j.derAux = j.derKinds[:0], j.derAux[:0]
	switch id {
	case expStartID, expEndID, noteID, sessionID:
		ev, err := j.decodeEntry(int(idx), &decState{created: j.h.Created})
		if err != nil {
			j.undecodable(int(idx))
			return
		}
		m := Mark{T: e.max.Duration(), Kind: id}
		switch p := ev.Data.(type) {
		case event.ExperimentStart:
			m.Exp, m.Text = p.ID, p.Name
		case event.ExperimentEnd:
			m.Exp, m.Text = p.Exp, p.Conclusion
			if m.Text == "" {
				m.Text = string(p.Trigger)
			}
		case event.Note:
			m.Exp, m.Text = p.Exp, p.Text
		case event.Session:
			m.Text = DescribeSession(p.SessionHeader)
		case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
			event.ConnState, event.DriverState, event.HostChanges, event.HostState, event.ExperimentFingerprint, event.ExperimentUpdate,
			event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale, event.GitAction,
			event.GitMoved, event.GitStatus, event.JournalStatus, event.Key, event.KillStep,
			event.LogBench, event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset,
			event.Prefill, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
			event.ServerFailure, event.ServerHealthy, event.ServerLaunched, event.ServerObserved,
			event.ServerReady, event.ServerStatus, event.SpecDecode, event.Throughput, event.TokRate,
			event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
			// not a mark
		}
		// Marks arrive in running-max order, which never decreases.
		j.marks = append(j.marks, m)
		j.markIdx = append(j.markIdx, idx)
	}
}

// wellFormed reports whether data is JSON enough to index: for the
// high-rate compact kinds, whose decoders read every byte with this
// package's tokenizer, a value whose brackets and strings close where the
// data ends (a torn or spliced line is not); for the others
// json.Valid (their decoders are encoding/json's). A bad number inside a
// compact kind's data is found when it is decoded (Undecodable).
func wellFormed(id event.Kind, data []byte) bool {
	switch id {
	case gpuSampleID, logLinesID, tokRateID: // the first two are split by indexLine instead
		end, err := skipValue(data, 0)
		return err == nil && end == len(data)
	}
	return json.Valid(data)
}

// everMark records that by entry idx the GPU indices in mask had been seen.
type everMark struct {
	idx  int32
	mask uint64
}

// gpuPresent returns the present-index mask of gpu-sample data, split (0
// when it does not parse: decoding will skip it).
func gpuPresent(el [][]byte) uint64 {
	flags, ok := parseInt(el[0])
	if !ok {
		return 0
	}
	el = el[1:]
	if flags&gpuFlagMissing != 0 && len(el) > 0 {
		el = el[1:]
	}
	if flags&gpuFlagAt != 0 && len(el) > 0 {
		el = el[1:]
	}
	if flags&gpuFlagApps != 0 && len(el) > 0 {
		el = el[1:]
	}
	var mask uint64
	for _, row := range el {
		i := 1
		for i < len(row) && isSpace(row[i]) {
			i++
		}
		k := i
		for k < len(row) && (row[k] == '-' || row[k] >= '0' && row[k] <= '9') {
			k++
		}
		n, ok := parseInt(row[i:k])
		if ok && n >= 0 && n < 63 {
			mask |= 1 << n
		} else {
			mask |= 1 << 63
		}
	}
	return mask
}

var (
	logLinesID  = event.KindLogLines
	logResetID  = event.KindLogReset
	tokRateID   = event.KindTokRate
	gpuSampleID = event.KindGPUSample
	expStartID  = event.KindExperimentStart
	expEndID    = event.KindExperimentEnd
	noteID      = event.KindNote
	sessionID   = event.KindSession
)

// isKeyframe reports whether gpu-sample data has its keyframe flag, reading
// only the flags number.
func isKeyframe(data []byte) bool {
	if len(data) < 2 || data[0] != '[' {
		return false
	}
	i := 1
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	var n int
	for ; i < len(data) && data[i] >= '0' && data[i] <= '9'; i++ {
		n = n*10 + int(data[i]-'0')
		if n > 1<<20 {
			return false
		}
	}
	return n&gpuFlagKey != 0
}

// decodeRaw decodes the line of entry i with decoder state st.
func (j *Journal) decodeRaw(i int, st *decState) (event.Event, error) {
	e := j.entries[i]
	line := j.data[e.off : e.off+int64(e.n)]
	fr, ok := splitFrame(line)
	if !ok {
		return event.Event{}, errSyntax
	}
	at := j.h.Created.Add(e.t.Duration()).Local()
	p, err := codecOf(e.kind).dec(st, at, fr.data)
	if err != nil {
		return event.Event{}, fmt.Errorf("line at byte %d (%s): %w", e.off, codecOf(e.kind).kind, err)
	}
	return event.Event{At: at, Data: p}, nil
}

// decodeSeq decodes entry i as part of an in-order pass whose state is st
// and whose current keyframe entry is *key: a gpu-sample delta whose
// keyframe is not the current one primes st from it first.
func (j *Journal) decodeSeq(i int, st *decState, key *int32) (event.Event, error) {
	e := j.entries[i]
	if e.kind == gpuSampleID {
		switch {
		case e.key == int32(i):
			*key = e.key
		case e.key >= 0 && e.key != *key:
			*key = e.key
			st.gpu = gpuDecState{}
			_, _ = j.decodeEntry(int(e.key), st)
		}
	}
	return j.decodeEntry(i, st)
}

// Path returns the journal's file name.
func (j *Journal) Path() string { return j.path }

// Header returns the journal's header.
func (j *Journal) Header() event.SessionHeader { return j.h }

// Start returns the header's created time (local time): event time 0.
func (j *Journal) Start() time.Time { return j.h.Created.Local() }

// Duration returns the latest event time in the journal (0 when it has no
// events).
func (j *Journal) Duration() time.Duration {
	if n := len(j.entries); n > 0 {
		return j.entries[n-1].max.Duration()
	}
	return 0
}

// Len returns the number of indexed events.
func (j *Journal) Len() int { return len(j.entries) }

// Problems returns what was skipped so far.
func (j *Journal) Problems() Problems {
	p := j.probs
	p.UnknownKinds = slices.Clone(p.UnknownKinds)
	return p
}

// Marks returns the experiment starts and ends and the notes, in time order.
func (j *Journal) Marks() []Mark { return slices.Clone(j.marks) }

// Close releases the file.
func (j *Journal) Close() error {
	j.data, j.entries = nil, nil
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// Scan calls fn with every event in file order, decoded; events whose data
// does not decode are skipped (Problems.Undecodable). It stops at fn's
// first error and returns it.
func (j *Journal) Scan(fn func(e event.Event) error) error {
	st := decState{created: j.h.Created}
	key := int32(-1)
	for i := range j.entries {
		ev, err := j.decodeSeq(i, &st, &key)
		if err != nil {
			j.undecodable(i)
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

// search returns the first entry whose running-max time is above t.
func (j *Journal) search(t micros) int {
	return sort.Search(len(j.entries), func(i int) bool { return j.entries[i].max > t })
}

// floorMicros converts a duration to event time, rounding down (towards
// -inf), so that "max > d" is "max > floorMicros(d)" for whole microseconds.
func floorMicros(d time.Duration) micros {
	m := d / time.Microsecond
	if d%time.Microsecond < 0 {
		m--
	}
	return micros(m)
}

// Events returns, decoded and in file order, the events whose running-max
// time is in (from, to]. Events that do not decode are skipped
// (Problems.Undecodable).
func (j *Journal) Events(from, to time.Duration) ([]event.Event, error) {
	lo, hi := j.search(floorMicros(from)), j.search(floorMicros(to))
	if hi <= lo {
		return nil, nil
	}
	out := make([]event.Event, 0, hi-lo)
	st := decState{created: j.h.Created}
	key := int32(-1)
	for i := lo; i < hi; i++ {
		ev, err := j.decodeSeq(i, &st, &key)
		if err != nil {
			j.undecodable(i)
			continue
		}
		out = append(out, ev)
	}
	return out, nil
}

// Refresh indexes the lines appended to the file since Open or the last
// Refresh (a journal being written), including a torn last line that has
// since been completed. It returns how many events were added. A file that
// shrank below what was indexed gives an error.
func (j *Journal) Refresh() (int, error) {
	if j.f == nil {
		return 0, errors.New("journal: refresh after close")
	}
	st, err := j.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("journal: %w", err)
	}
	switch size := st.Size(); {
	case size < j.indexed:
		return 0, fmt.Errorf("journal %s shrank from %d to %d bytes while open", j.path, j.indexed, size)
	case size < int64(len(j.data)):
		// A torn tail was cut (Append resumed the journal).
		j.data = j.data[:j.indexed]
	}
	before := len(j.entries)
	if err := j.readMore(); err != nil {
		return 0, err
	}
	j.index()
	return len(j.entries) - before, nil
}
