package journal

import (
	"sort"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// CatchUp's view of the replay model (tui): its buffers must be at least
// as large as the model's; larger only costs time.
const (
	// CatchUpLogLines is the log ring CatchUp rebuilds, lines: at least
	// tui.DefaultLogLines (a replay with a bigger Options.LogLines would
	// show fewer lines after a seek than when played).
	CatchUpLogLines = 10000
	// CatchUpMarkSearch and CatchUpMarkHorizon are at least the log
	// tail's markSearch (512) and markHorizon (2048): how far back a
	// ready/failure looks for its line, and how long it waits for it.
	CatchUpMarkSearch  = 1024
	CatchUpMarkHorizon = 4096
	// CatchUpRates is at least the tok/s ring (rateCap, 1024), points.
	CatchUpRates = 2048
)

// catchRule is how CatchUp picks the events of one kind.
type catchRule uint8

const (
	catchIgnore     catchRule = iota // the screen never shows it
	catchLatest                      // only the last one matters
	catchAll                         // every one (rare kinds, or each one counts)
	catchGPUSample                   // the last sample holding each GPU index, and the last sample
	catchGPUFailure                  // the failures no sample has cleared yet
	catchLog                         // the log window
	catchLogReset                    // every one, each a line of the log window: log-reset (server phase, tok/s runs, experiment runs)
	catchXid                         // every one (the GPU rows), each at most one line of the log window: gpu-xid
	catchLogMark                     // every one, its text blanked before the log window
	catchRate                        // the tok/s window, run starts, and open experiments' samples
)

// catchUpRules is, per kind, which of the events before t the screen at t
// depends on (read from tui's Model.apply and the journal.Ledger it feeds).
var catchUpRules = map[string]catchRule{
	// GPU rows keep each index's latest row (a missing GPU keeps its last
	// values); the latest sample decides which rows are missing and the
	// "last sample" time, and clears the stale marker.
	"gpu-sample": catchGPUSample,
	// A failure stays in the banner (with a count of repeats) until a
	// sample clears it (any sample for a whole-host failure, a healthy
	// row of its bus otherwise); cleared ones leave nothing.
	"gpu-failure": catchGPUFailure,
	"gpu-stale":   catchLatest, // cleared by the next sample (the last sample is kept)
	// An Xid marks its GPU's row (a critical one for the rest of the
	// session, the others until a server-launched or ten minutes of data
	// time after the GPU's latest: every Xid and launch decides it) and
	// is a line of the log ring, or, grouped with identical ones within a
	// second (decided by the Xids alone), adds to one: not a line the
	// log window can count on.
	"gpu-xid": catchXid,
	// The header says how GPUs are sampled (the latest one), the GPU
	// table words what a sampler reported by the one in use when it came,
	// and a change of sampler is a line of the log ring: every one (a
	// few a session), not counted in the log window (like an Xid's).
	"gpu-source": catchAll,
	// The log ring: the last CatchUpLogLines lines and reset markers, with
	// the ready/failure highlights; see logWindow.
	"log-lines": catchLog,
	"log-reset": catchLogReset,
	// The notice is cleared by the next lines; its path stays.
	"log-notice":       catchAll,
	"log-follow-error": catchIgnore,
	"throughput":       catchIgnore, // the screen uses tok-rate
	// The tok/s ring keeps CatchUpRates points; the server phase turns
	// "running" at the first figure of a run; an experiment's result is
	// computed from every figure while it is open (or closed by a new
	// start without its end).
	"tok-rate":     catchRate,
	"prefill":      catchIgnore,
	"spec-decode":  catchIgnore,
	"bench-result": catchIgnore,
	// Server phase, failure tier, experiment run boundaries, and the log
	// line highlight (only meaningful inside the log window).
	"server-ready":   catchLogMark,
	"server-failure": catchLogMark,
	// Rare and each one counts: run boundaries for the tok/s ring and the
	// experiments, the control overlay's state; a launch clears the GPU
	// rows' non-critical Xids.
	"server-status":   catchAll,
	"server-launched": catchAll,
	"server-observed": catchIgnore,
	"server-healthy":  catchIgnore,
	"server-kill":     catchIgnore,
	"repo-head":       catchLatest, // header HEAD text and short id
	"repo-unreadable": catchLatest, // header HEAD text (the later of the two wins)
	"git-status":      catchLatest,
	"git-action":      catchLatest, // the panel shows the last action
	"git-moved":       catchAll,    // the banner counts them
	"conn-state":      catchAll,    // the host name is the last non-empty one; few events
	// Experiments and notes: the ledger keeps them all.
	"note":            catchAll,
	"exp-start":       catchAll,
	"exp-fingerprint": catchAll,
	"exp-update":      catchAll,
	"exp-end":         catchAll,
	"key":             catchIgnore,
	"session":         catchAll, // the ledger ends at it what a crashed session left open
	// The baseline mark: the latest one wins (it may clear the mark).
	"exp-baseline": catchLatest,
	// Repeat tags and finished benchmark runs: the ledger keeps each on
	// its experiment (few events, each one counts).
	"exp-repeat": catchAll,
	"bench-done": catchAll,
	// Every run started: with the bench-done events they say whether a
	// run was going at t (its progress is never journaled), and which
	// tok/s samples the ledger leaves out of an experiment's result (those
	// while a benchmark ran).
	"bench-start": catchAll,
	// Who drives the host: the header shows the latest role and holder.
	"driver": catchLatest,
}

// seekCache is what CatchUp learnt about failures, kept across calls.
type seekCache struct {
	failBus map[int32]string    // gpu-failure entry → its bus (normalised; "" whole host)
	scans   map[string]*busScan // per bus: which samples clear a failure of it
}

// busScan is the samples examined for one bus: those in [from, next) and,
// among them, the ones that clear its failures.
type busScan struct {
	from, next int32
	clears     []int32
	st         decState
	key        int32
}

// CatchUp returns the events that, applied in order to a fresh replay
// model (tui.New with the replay's options and size), give the screen and
// state that applying every event with running-max time ≤ t gives — but
// only what is still shown: the last GPU rows, the log window, the tok/s
// window, the experiments and notes, the latest state of each panel (the
// rules are catchUpRules). Two kinds of event may differ from the file:
// server-ready and server-failure events older than the log window come
// with their Text blanked (their line is no longer shown; the highlight
// must not land on a later line). Undecodable events are skipped
// (Problems.Undecodable).
func (j *Journal) CatchUp(t time.Duration) ([]event.Event, error) {
	hi := j.search(floorMicros(t))
	if hi == 0 {
		return nil, nil
	}
	sel := make([]bool, hi)
	last := map[kindID]int{}
	for i := hi - 1; i >= 0; i-- {
		id := j.entries[i].kind
		if catchUpRules[codecOf(id).kind] == catchLatest {
			if _, ok := last[id]; !ok {
				last[id] = i
				sel[i] = true
			}
		}
	}
	logFrom := j.logWindow(hi)
	for i := range hi {
		switch catchUpRules[codecOf(j.entries[i].kind).kind] {
		case catchAll, catchLogReset, catchLogMark, catchXid:
			sel[i] = true
		case catchLog:
			sel[i] = i >= logFrom
		}
	}
	j.selectSamples(hi, sel)
	if err := j.selectFailures(hi, sel); err != nil {
		return nil, err
	}
	j.selectRates(hi, sel)

	out := make([]event.Event, 0, 256)
	st := decState{created: j.h.Created}
	key := int32(-1)
	for i := range hi {
		if !sel[i] {
			continue
		}
		ev, err := j.decodeSeq(i, &st, &key)
		if err != nil {
			j.undecodable(i)
			continue
		}
		if i < logFrom {
			switch p := ev.Data.(type) {
			case serverlog.Ready:
				p.Text = ""
				ev.Data = p
			case serverlog.Failure:
				p.Text = ""
				ev.Data = p
			}
		}
		out = append(out, ev)
	}
	return out, nil
}

// logWindow returns the first entry of the log window before hi: from
// there on every log-lines event is kept. The window holds at least
// CatchUpLogLines lines (or starts at the journal's start), every
// ready/failure in it has CatchUpMarkSearch lines before it inside the
// window (its backward search sees what it saw live), and the one before
// the window is CatchUpMarkHorizon lines before it (no highlight waits
// for a line of the window from outside, the log tail having dropped it),
// at a batch boundary (the tail drops waiting highlights after a batch).
// Xids and changes of GPU sampler are not counted (a grouped Xid adds no
// line): the window holds at least the lines counted.
func (j *Journal) logWindow(hi int) int {
	lines := 0      // log lines (and reset markers) in [i, hi)
	markAfter := -1 // the most lines after any mark in [i, hi)
	cand, candLines := -1, 0
	for i := hi - 1; i >= 0; i-- {
		e := &j.entries[i]
		switch catchUpRules[codecOf(e.kind).kind] {
		case catchLog:
			// A window may start after this batch.
			if cand < 0 && lines >= CatchUpLogLines && (markAfter < 0 || lines >= markAfter+CatchUpMarkSearch) {
				cand, candLines = i+1, lines
			}
			lines += int(e.aux)
		case catchLogReset:
			lines++
		case catchLogMark:
			if cand >= 0 && lines-candLines < CatchUpMarkHorizon {
				cand = -1 // it may highlight a line of the window: take it in
			}
			markAfter = max(markAfter, lines)
		}
		if cand >= 0 && lines-candLines >= CatchUpMarkHorizon {
			return cand
		}
	}
	if cand >= 0 {
		return cand // no mark before it at all
	}
	return 0
}

// everAt returns the GPU indices seen in the samples before entry hi.
func (j *Journal) everAt(hi int) uint64 {
	k := sort.Search(len(j.gpuEver), func(k int) bool { return int(j.gpuEver[k].idx) >= hi })
	if k == 0 {
		return 0
	}
	return j.gpuEver[k-1].mask
}

// selectSamples keeps, walking back from hi, the last sample and each
// sample that holds an index no later one has. Indices of 63 and more
// (bit 63) are not told apart: every sample with one is kept.
func (j *Journal) selectSamples(hi int, sel []bool) {
	ever := j.everAt(hi)
	var covered uint64
	first := true
	for i := hi - 1; i >= 0; i-- {
		e := &j.entries[i]
		if e.kind != gpuSampleID {
			continue
		}
		if first || e.aux&^covered != 0 || e.aux&(1<<63) != 0 {
			sel[i] = true
			first = false
		}
		covered |= e.aux
		if covered == ever && ever&(1<<63) == 0 {
			return
		}
	}
}

// selectFailures keeps the gpu failures that no sample before hi clears.
func (j *Journal) selectFailures(hi int, sel []bool) error {
	for i := range hi {
		if j.entries[i].kind != gpuFailureID {
			continue
		}
		bus, ok := j.failureBus(int32(i))
		if !ok {
			continue // undecodable: skipped when played too
		}
		cleared, err := j.clearedBefore(bus, int32(i), int32(hi))
		if err != nil {
			return err
		}
		if !cleared {
			sel[i] = true
		}
	}
	return nil
}

var gpuFailureID = kindIDs["gpu-failure"]

// failureBus returns the normalised bus id of failure entry i ("" for a
// whole-host failure); ok is false when it does not decode.
func (j *Journal) failureBus(i int32) (string, bool) {
	if j.seek.failBus == nil {
		j.seek.failBus = map[int32]string{}
	}
	if b, ok := j.seek.failBus[i]; ok {
		return b, true
	}
	ev, err := j.decodeEntry(int(i), &decState{created: j.h.Created})
	if err != nil {
		j.undecodable(int(i))
		return "", false
	}
	b := gpu.NormBusID(sanitize.String(ev.Data.(gpu.Failure).BusID))
	j.seek.failBus[i] = b
	return b, true
}

// clearedBefore reports whether a sample after failure entry f and before
// entry hi clears a failure of bus.
func (j *Journal) clearedBefore(bus string, f, hi int32) (bool, error) {
	if j.seek.scans == nil {
		j.seek.scans = map[string]*busScan{}
	}
	s := j.seek.scans[bus]
	if s == nil || f+1 < s.from {
		// First failure of this bus (or an earlier one than scanned).
		s = &busScan{from: f + 1, next: f + 1, key: -1, st: decState{created: j.h.Created}}
		j.seek.scans[bus] = s
	}
	k := sort.Search(len(s.clears), func(k int) bool { return s.clears[k] > f })
	if k < len(s.clears) {
		return s.clears[k] < hi, nil
	}
	for s.next < hi {
		i := s.next
		s.next++
		if j.entries[i].kind != gpuSampleID {
			continue
		}
		ev, err := j.decodeSeq(int(i), &s.st, &s.key)
		if err != nil {
			continue // not played either
		}
		if clearsFailure(bus, ev.Data.(gpu.Sample)) {
			s.clears = append(s.clears, i)
			if i > f {
				return true, nil
			}
		}
	}
	return false, nil
}

// clearsFailure mirrors the GPU table (tui/gpus.go applySample): a sample
// with rows ends a whole-host failure, and a failure naming a bus once a
// row of that bus reports and is not lost.
func clearsFailure(bus string, s gpu.Sample) bool {
	if len(s.GPUs) == 0 {
		return false
	}
	if bus == "" {
		return true
	}
	for i := range s.GPUs {
		g := &s.GPUs[i]
		if gpu.NormBusID(sanitize.String(g.BusID.S)) == bus && !g.ShowsLost() {
			return true
		}
	}
	return false
}

// selectRates keeps the tok/s figures the screen still depends on: the
// last CatchUpRates+1 plain figures and everything after the first of
// them (the ring's gaps depend only on the figure before); the first plain
// figure of each run (it turns the server phase to running); and every
// figure while an experiment is open at hi, or was open until a new start
// closed it without its end (its result is computed from them).
func (j *Journal) selectRates(hi int, sel []bool) {
	n := 0
	for i := hi - 1; i >= 0; i-- {
		e := &j.entries[i]
		if e.kind != tokRateID {
			continue
		}
		sel[i] = true
		if e.aux == 0 {
			n++
			if n > CatchUpRates {
				break
			}
		}
	}
	runStart := true
	for i := range hi {
		e := &j.entries[i]
		switch e.kind {
		case logResetID, serverFailureID:
			runStart = true
		case tokRateID:
			if runStart && e.aux&rateDropped == 0 {
				sel[i] = true
				runStart = false
			}
		}
	}
	for _, r := range j.provisionalRanges(hi) {
		for i := r[0]; i < r[1]; i++ {
			if j.entries[i].kind == tokRateID {
				sel[i] = true
			}
		}
	}
}

// tok-rate aux bits.
const (
	rateDropped   = 1 // an idle-gap artefact
	rateNotFinite = 2 // NaN or infinite: drawn as a gap
)

var serverFailureID = kindIDs["server-failure"]

// provisionalRanges returns the entry ranges [from, to) before hi in which
// an experiment was open and its result will be computed from the figures
// (by the ledger's rules: a repeated or empty id is ignored, a start closes
// the open one, an end closes the open one with its id).
func (j *Journal) provisionalRanges(hi int) [][2]int {
	var out [][2]int
	seen := map[string]bool{}
	open, openID := -1, ""
	for k, m := range j.marks {
		i := int(j.markIdx[k])
		if i >= hi {
			break
		}
		switch m.Kind {
		case "exp-start":
			if m.Exp == "" || seen[m.Exp] {
				continue
			}
			seen[m.Exp] = true
			if open >= 0 {
				out = append(out, [2]int{open, i})
			}
			open, openID = i, m.Exp
		case "exp-end":
			if open >= 0 && m.Exp == openID {
				open = -1
			}
		}
	}
	if open >= 0 {
		out = append(out, [2]int{open, hi})
	}
	return out
}
