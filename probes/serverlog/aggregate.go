package serverlog

import (
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"slices"
	"time"
)

// Defaults of the Aggregator's tunables.
const (
	// DefaultIdleGap: a SGLang point that comes this long (by the lines'
	// own timestamps) after the previous point, or that is the first
	// point, starts a new busy period.
	DefaultIdleGap = 10 * time.Second
	// DefaultDropBelow: the first point of a busy period is dropped when
	// it is below this fraction of the point after it.
	DefaultDropBelow = 0.05
	// roundSpan: lines of one DP round whose timestamps differ by up to
	// this much still belong together (a round can straddle a second).
	roundSpan = 1 // seconds
	// historyLen: how many kept points the end-of-input rule looks at.
	historyLen = 16
)

// Aggregator turns per-rank / per-engine Throughput reports into the
// server's tok/s series (Rate values), in order:
//
//   - SGLang with DP attention (the rank tag has DPn): every DP rank logs its
//     own line; lines with distinct DP ranks whose timestamps are within 1 s
//     of the round's first line form one round, and the point is their sum.
//     A round ends when a DP rank repeats, when a line comes more than 1 s
//     later, or, once the set of ranks is known from an earlier round, as
//     soon as every known rank has reported.
//   - SGLang without DP: only TP0 or untagged lines count (other TP ranks
//     repeat TP0's numbers); each is a point.
//   - vLLM: engines ("Engine 000:", "Engine 001:") are summed like DP ranks;
//     V0 lines (no engine) are points.
//
// Idle artefact (SGLang only): the first decode line after idle divides the
// tokens of 40 steps by the whole idle gap, so it reads near 0 (0.39 then
// 178.86 tok/s in sglang#11948). A point is the first of a busy period when
// there is no earlier point or its timestamp is at least IdleGap after the
// previous point's; such a point is held until the next point arrives and
// is marked Dropped when it is below DropBelow (5%) of that next point. At
// the end of input (Flush) a held point with no successor is dropped only
// when it is below DropBelow of the median of the last 16 kept points.
// A real stall that recovers looks the same in the log and is treated the
// same.
//
// AcceptLength is the mean of the ranks' "accept len" (SGLang) or, for
// vLLM, the "Mean acceptance length" of the latest SpecDecoding line given
// to AddSpec (vLLM prints it after the throughput line, so it lags by one
// interval).
//
// The zero value is ready to use with the defaults. Not safe for concurrent
// use.
type Aggregator struct {
	IdleGap   time.Duration // 0 means DefaultIdleGap
	DropBelow float64       // 0 means DefaultDropBelow

	group    round
	known    []int // DP ranks / engines seen in closed rounds
	hasKnown bool

	prevSec  int64 // timestamp of the previous point, seconds
	prevOK   bool  // prevSec is valid
	anyPoint bool  // a point was made

	held     event.TokRate // first point of a busy period, waiting for its successor
	holding  bool
	history  []float64 // last kept SGLang points, a ring once full (only their median is read)
	histAt   int       // the oldest of history when it is full
	specLen  float64   // latest vLLM mean acceptance length
	haveSpec bool

	stamp     string // the last Stamp seen and its value in seconds
	stampSec  int64
	stampOK   bool
	stampDone bool

	// WriteJSONL's bookkeeping (track set): the Line of every Throughput
	// of the held point, and of the points that were dropped. With track
	// set, Add and Flush return no SGLang points (keep).
	track     bool
	heldLines []int
	dropped   []int
}

// round is the DP ranks / engines gathered for one point.
type round struct {
	keys      []int
	sum       float64
	acceptSum float64
	acceptN   int
	sec       int64
	secOK     bool
	sglang    bool
	open      bool
	lines     []int // the Throughputs' Line numbers, when tracking
}

// Add feeds one Throughput and appends the points it completes to dst.
func (a *Aggregator) Add(dst []event.TokRate, t event.Throughput) []event.TokRate {
	sglang := t.Server != ServerVLLM
	key := -1
	if sglang {
		if t.DP < 0 && !isTP0OrNone(t.Rank) {
			return dst
		}
		key = t.DP
	} else {
		key = t.Engine
	}
	return a.add(dst, sglang, key, t.Stamp, t.Line, t.TokPerSec, t.AcceptLength, t.Has&event.HasAcceptLength != 0)
}

// add is Add for a Throughput that counts, given by the fields that Add
// reads: key is its DP rank or engine (-1 when none), accept its accept
// length when hasAccept.
func (a *Aggregator) add(dst []event.TokRate, sglang bool, key int, stamp string, line int, tokS, accept float64, hasAccept bool) []event.TokRate {
	if stamp != a.stamp || !a.stampDone {
		// Lines of one second share their stamp: parse it once.
		a.stamp, a.stampDone = stamp, true
		a.stampSec, a.stampOK = stampSeconds(stamp)
	}
	sec, secOK := a.stampSec, a.stampOK

	if sglang && key < 0 && !a.group.open {
		// A point of its own (SGLang without DP, the usual case): what
		// opening and closing a round of one line does.
		r := event.TokRate{TokPerSec: tokS, Ranks: 1}
		if hasAccept {
			r.AcceptLength, r.HasAccept = accept, true
		}
		return a.closeSGLang(dst, r, sec, secOK, line)
	}
	if a.group.open && (a.group.sglang != sglang || key < 0 || slices.Contains(a.group.keys, key) ||
		(secOK && a.group.secOK && (sec-a.group.sec > roundSpan || sec < a.group.sec))) {
		dst = a.closeRound(dst)
	}
	g := &a.group
	if !g.open {
		*g = round{keys: g.keys[:0], lines: g.lines[:0], sec: sec, secOK: secOK, sglang: sglang, open: true}
	}
	g.keys = append(g.keys, key)
	if a.track {
		g.lines = append(g.lines, line)
	}
	g.sum += tokS
	if hasAccept {
		g.acceptSum += accept
		g.acceptN++
	}
	if key < 0 || (a.hasKnown && coversAll(g.keys, a.known)) {
		dst = a.closeRound(dst)
	}
	return dst
}

// AddSpec records a vLLM speculative-decoding line; its mean acceptance
// length is carried by the following vLLM points.
func (a *Aggregator) AddSpec(s event.SpecDecode) {
	if s.Has&HasMeanAcceptLength != 0 {
		a.specLen, a.haveSpec = s.MeanAcceptLength, true
	}
}

// Flush closes the open round and releases a held point; call it at the
// end of input.
func (a *Aggregator) Flush(dst []event.TokRate) []event.TokRate {
	if a.group.open {
		dst = a.closeRound(dst)
	}
	if a.holding {
		r := a.held
		a.holding = false
		if len(a.history) > 0 && r.TokPerSec < a.dropBelow()*median(a.history) {
			r.Dropped = true
			a.dropped = append(a.dropped, a.heldLines...)
		}
		dst = a.keep(dst, &r)
	}
	return dst
}

// Reset forgets all state, for a log that restarted.
func (a *Aggregator) Reset() {
	*a = Aggregator{IdleGap: a.IdleGap, DropBelow: a.DropBelow, track: a.track}
}

// undecided reports whether a Throughput already added may still turn out
// to be part of a dropped point: an SGLang round is open, or a point is
// held for its successor.
func (a *Aggregator) undecided() bool {
	return a.holding || (a.group.open && a.group.sglang)
}

func (a *Aggregator) closeRound(dst []event.TokRate) []event.TokRate {
	g := &a.group
	g.open = false
	if len(g.keys) > 1 || g.keys[0] >= 0 {
		for _, k := range g.keys {
			if !slices.Contains(a.known, k) {
				a.known = append(a.known, k)
			}
		}
		a.hasKnown = true
	}
	r := event.TokRate{TokPerSec: g.sum, Ranks: len(g.keys)}
	switch {
	case g.acceptN > 0:
		r.AcceptLength, r.HasAccept = g.acceptSum/float64(g.acceptN), true
	case !g.sglang && a.haveSpec:
		r.AcceptLength, r.HasAccept = a.specLen, true
	}
	if !g.sglang {
		return append(dst, r)
	}
	return a.closeSGLang(dst, r, g.sec, g.secOK, -1)
}

// closeSGLang applies the SGLang idle-artefact rule to the point r of the
// round just closed, whose timestamp is sec (when secOK); its lines are
// line when it is not -1 (a round of one line), else the group's.
func (a *Aggregator) closeSGLang(dst []event.TokRate, r event.TokRate, sec int64, secOK bool, line int) []event.TokRate {
	firstOfBusy := !a.anyPoint || (a.prevOK && secOK && time.Duration(sec-a.prevSec)*time.Second >= a.idleGap())
	a.anyPoint = true
	a.prevSec, a.prevOK = sec, secOK
	if a.holding {
		h := a.held
		a.holding = false
		if h.TokPerSec < a.dropBelow()*r.TokPerSec {
			h.Dropped = true
			a.dropped = append(a.dropped, a.heldLines...)
		}
		dst = a.keep(dst, &h)
	}
	if firstOfBusy {
		a.held, a.holding = r, true
		a.heldLines = a.heldLines[:0]
		if line != -1 {
			if a.track {
				a.heldLines = append(a.heldLines, line)
			}
		} else {
			a.heldLines = append(a.heldLines, a.group.lines...)
		}
		return dst
	}
	return a.keep(dst, &r)
}

// keep appends r and, when it is part of the series, remembers it. With
// track set it appends nothing: WriteJSONL reads only the lines dropped.
func (a *Aggregator) keep(dst []event.TokRate, r *event.TokRate) []event.TokRate {
	if !r.Dropped {
		if len(a.history) == historyLen {
			a.history[a.histAt] = r.TokPerSec
			a.histAt = (a.histAt + 1) % historyLen
		} else {
			a.history = append(a.history, r.TokPerSec)
		}
	}
	if a.track {
		return dst
	}
	return append(dst, *r)
}

func (a *Aggregator) idleGap() time.Duration {
	if a.IdleGap > 0 {
		return a.IdleGap
	}
	return DefaultIdleGap
}

func (a *Aggregator) dropBelow() float64 {
	if a.DropBelow > 0 {
		return a.DropBelow
	}
	return DefaultDropBelow
}

// isTP0OrNone reports whether an SGLang rank tag without DP is the one
// whose numbers stand for the server: no tag, or TP0 (with any EPn/PPn).
func isTP0OrNone(rank string) bool {
	if rank == "" {
		return true
	}
	for i := 0; i < len(rank); {
		j := i
		for j < len(rank) && rank[j] != ' ' {
			j++
		}
		tok := rank[i:j]
		if len(tok) > 2 && tok[:2] == "TP" {
			return tok == "TP0"
		}
		i = j + 1
	}
	return true
}

func coversAll(have, want []int) bool {
	for _, k := range want {
		if !slices.Contains(have, k) {
			return false
		}
	}
	return true
}

// stampSeconds converts "2025-10-20 03:02:22" or "05-19 10:13:11" (no
// year: year 0 is used, which is fine for differences within a year) to
// seconds.
func stampSeconds(s string) (int64, bool) {
	year := 0
	switch len(s) {
	case 19:
		year = atoi(s[0:4])
		s = s[5:]
	case 14:
	default:
		return 0, false
	}
	mon, day, h, m, sec := atoi(s[0:2]), atoi(s[3:5]), atoi(s[6:8]), atoi(s[9:11]), atoi(s[12:14])
	if mon < 1 || mon > 12 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60 {
		return 0, false
	}
	return daysFromCivil(year, mon, day)*86400 + int64(h*3600+m*60+sec), true
}

// daysFromCivil returns the days from 1970-01-01 to the given date of the
// proleptic Gregorian calendar, as time.Date(...).Unix() counts them (a
// day past the month's end runs on into the next month, as time.Date
// normalises it). It is H. Hinnant's days_from_civil: time.Date costs
// more than the rest of the idle rule, once a second of log.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era-- // floor division
	}
	yoe := y - era*400 // [0, 399]
	mp := (m + 9) % 12 // March is 0
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
