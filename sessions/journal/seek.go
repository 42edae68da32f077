package journal

import (
	"sort"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// CatchUp's bounds: at least the screen's buffer sizes (event.Screen*),
// which the replay model (tui) keeps; larger only costs time.
const (
	// CatchUpLogLines is the log ring CatchUp rebuilds, lines: the
	// screen's, event.ScreenLogLines (a replay with a bigger
	// Options.LogLines would show fewer lines after a seek than when
	// played).
	CatchUpLogLines = event.ScreenLogLines
	// CatchUpMarkSearch and CatchUpMarkHorizon are twice the screen's
	// event.ScreenMarkSearch and event.ScreenMarkHorizon: how far back a
	// ready/failure looks for its line, and how long it waits for it.
	CatchUpMarkSearch  = 2 * event.ScreenMarkSearch
	CatchUpMarkHorizon = 2 * event.ScreenMarkHorizon
	// CatchUpRates is twice the screen's tok/s ring,
	// event.ScreenRatePoints, points.
	CatchUpRates = 2 * event.ScreenRatePoints
)

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
	last := map[event.Kind]int{}
	for i := hi - 1; i >= 0; i-- {
		id := j.entries[i].kind
		if id.Info().CatchUp == event.CatchLatest {
			if _, ok := last[id]; !ok {
				last[id] = i
				sel[i] = true
			}
		}
	}
	logFrom := j.logWindow(hi)
	for i := range hi {
		switch j.entries[i].kind.Info().CatchUp {
		case event.CatchAll, event.CatchLogReset, event.CatchLogMark, event.CatchXid:
			sel[i] = true
		case event.CatchLog:
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
			case event.ServerReady:
				p.Text = ""
				ev.Data = p
			case event.ServerFailure:
				p.Text = ""
				ev.Data = p
			case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
				event.ConnState, event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint,
				event.ExperimentStart, event.ExperimentUpdate, event.GPUFailure, event.GPUSample,
				event.GPUSource, event.GPUStale, event.GitAction, event.GitMoved, event.GitStatus,
				event.JournalStatus, event.Key, event.KillStep, event.LogBench, event.LogFollowError,
				event.LogLines, event.LogNotice, event.LogReset, event.Note, event.Prefill,
				event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
				event.ServerHealthy, event.ServerLaunched, event.ServerObserved, event.ServerStatus,
				event.Session, event.SpecDecode, event.Throughput, event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
				// kept by the rules of the kind table (event.KindInfo.CatchUp), not rewritten
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
		switch e.kind.Info().CatchUp {
		case event.CatchLog:
			// A window may start after this batch.
			if cand < 0 && lines >= CatchUpLogLines && (markAfter < 0 || lines >= markAfter+CatchUpMarkSearch) {
				cand, candLines = i+1, lines
			}
			lines += int(e.aux)
		case event.CatchLogReset:
			lines++
		case event.CatchLogMark:
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

var gpuFailureID = event.KindGPUFailure

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
	b := gpu.NormBusID(sanitize.String(ev.Data.(event.GPUFailure).BusID))
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
		if clearsFailure(bus, ev.Data.(event.GPUSample)) {
			s.clears = append(s.clears, i)
			if i > f {
				return true, nil
			}
		}
	}
	return false, nil
}

// clearsFailure mirrors the GPU table (tui/panels/gpus Table.ApplySample): a sample
// with rows ends a whole-host failure, and a failure naming a bus once a
// row of that bus reports and is not lost.
func clearsFailure(bus string, s event.GPUSample) bool {
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

var serverFailureID = event.KindServerFailure

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
		case event.KindExperimentStart:
			if m.Exp == "" || seen[m.Exp] {
				continue
			}
			seen[m.Exp] = true
			if open >= 0 {
				out = append(out, [2]int{open, i})
			}
			open, openID = i, m.Exp
		case event.KindExperimentEnd:
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
