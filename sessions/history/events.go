package history

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// DefaultLimit is how many of a host's journals Collect loads when its
// limit is 0: the newest ones; the others are counted (event.History.More).
const DefaultLimit = 20

// Own is the session's own journal for Collect: its path and the header
// the session appended (or created it) with. Only what sessions before it
// wrote is history.
type Own struct {
	Path   string
	Header event.SessionHeader
}

// Collect lists the journals under dir whose header names host (Find,
// own.Path among them), loads the newest limit of them (DefaultLimit when
// 0) and returns them as an event.History payload: per journal its name,
// header and the events that rebuild its experiments (Events), ids
// qualified except the own journal's. Of own.Path it keeps only what was
// written before the session own.Header started; a file this session
// created is left out. A journal read without experiments is left out
// too; More counts the journals past the cap, unread. A journal that
// cannot be read is one line of Errors; err is Find's.
func Collect(dir, host string, own Own, limit int) (event.History, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	var extra []string
	if own.Path != "" {
		extra = append(extra, own.Path)
	}
	js, err := Find(dir, host, extra...)
	if err != nil {
		return event.History{}, err
	}
	ownAbs := ""
	if own.Path != "" {
		ownAbs, _ = filepath.Abs(own.Path)
	}
	cut := own.Header.Created.UTC().Round(time.Microsecond)
	var h event.History
	for _, j := range js {
		isOwn := j.Path == ownAbs
		if isOwn && !j.Header.Created.Before(cut) {
			continue // created by this session: nothing earlier in it
		}
		if len(h.Journals) >= limit {
			h.More++
			continue
		}
		var r *report.Report
		if isOwn {
			r, err = LoadBefore(j.Path, cut)
		} else {
			r, _, err = Load(j.Path)
		}
		if err != nil {
			h.Errors = append(h.Errors, j.Name()+": "+err.Error())
			continue
		}
		if len(r.Ledger.Experiments()) == 0 {
			continue
		}
		hj := event.HistoryJournal{Name: j.Name(), Path: j.Path, Own: isOwn, Header: j.Header}
		q := j.Name()
		if isOwn {
			q = ""
		}
		hj.Events = Events(r, q)
		h.Journals = append(h.Journals, hj)
	}
	return h, nil
}

// errStop ends LoadBefore's scan.
var errStop = errors.New("stop")

// LoadBefore folds the journal at path as Load does, up to the session
// that started at cut (its session event, and all after it, left out):
// what sessions before it recorded. Experiments left open there were
// ended by that session's start (as the ledger ends them).
func LoadBefore(path string, cut time.Time) (*report.Report, error) {
	j, err := journal.Open(path)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	scan := func(fn func(event.Event) error) error {
		err := j.Scan(func(e event.Event) error {
			if s, ok := e.Data.(event.Session); ok && !s.Created.Before(cut) {
				return errStop
			}
			return fn(e)
		})
		if errors.Is(err, errStop) {
			return nil
		}
		return err
	}
	r, err := report.ReadReport(j.Header(), scan, false)
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", path, err)
	}
	return r, nil
}

// Events are the events that rebuild r's experiments in a fresh
// ledger.Ledger (event.HistoryJournal.Events): per experiment, in start
// order, its exp-start, exp-repeat, exp-fingerprint, bench-done runs,
// notes, and exp-end with its final result (none for one still open in a
// live journal); then the journal's baseline mark. Experiment ids
// (and repeat series) are qualified with Qualify(name, id) unless name is
// "".
func Events(r *report.Report, name string) []event.Event {
	q := func(id string) string {
		if name == "" || id == "" {
			return id
		}
		return Qualify(name, id)
	}
	var out []event.Event
	add := func(at time.Time, p event.Payload) { out = append(out, event.Event{At: at, Data: p}) }
	for _, x := range r.Ledger.Experiments() {
		id := q(x.ID)
		add(x.Started, event.ExperimentStart{ID: id, Name: x.Name, Hypothesis: x.Hypothesis, Trigger: x.StartedBy, Launch: x.Launch})
		if x.Repeat != nil {
			rp := *x.Repeat
			rp.Exp, rp.Series = q(rp.Exp), q(rp.Series)
			add(x.Started, rp)
		}
		if x.Fingerprint != nil {
			add(x.Started, event.ExperimentFingerprint{Exp: id, Fingerprint: *x.Fingerprint})
		}
		for _, b := range x.Bench {
			b.Exp = id
			add(x.Started, b)
		}
		for _, n := range x.Notes {
			nn := n.Note
			nn.Exp = id
			add(n.At, nn)
		}
		if !x.Open() {
			add(x.Ended, event.ExperimentEnd{Exp: id, Trigger: x.EndedBy, Conclusion: x.Conclusion, Result: x.Result, GPUs: x.EndGPUs})
		}
	}
	if b := r.Ledger.BaselineID(); b != "" {
		add(r.End, event.Baseline{Exp: qualifyMark(name, b)})
	}
	return out
}

// qualifyMark qualifies a baseline mark of journal name: a mark already
// qualified (an earlier session's experiment) stays as it is.
func qualifyMark(name, id string) string {
	if _, _, ok := Split(id); ok || name == "" {
		return id
	}
	return Qualify(name, id)
}

// Fold folds a history's journals into one ledger each, in the order
// given (newest first).
func Fold(h event.History) []*ledger.Ledger {
	out := make([]*ledger.Ledger, len(h.Journals))
	for i, j := range h.Journals {
		l := &ledger.Ledger{}
		for _, e := range j.Events {
			l.Apply(e)
		}
		out[i] = l
	}
	return out
}

// Experiments are every experiment of the ledgers, in the order given:
// what compare.Compare takes besides the session's own.
func Experiments(ls []*ledger.Ledger) []ledger.Experiment {
	var out []ledger.Experiment
	for _, l := range ls {
		out = slices.Concat(out, l.Experiments())
	}
	return out
}

// QualifyAll is exps with their ids qualified by journal name (Qualify):
// each experiment's id, its repeat's launch and series, and its benchmark
// runs' experiment (the notes keep theirs: a note's Exp is read only
// within its own journal). The elements' other slices are shared.
func QualifyAll(name string, exps []ledger.Experiment) []ledger.Experiment {
	out := make([]ledger.Experiment, len(exps))
	for i, x := range exps {
		x.ID = Qualify(name, x.ID)
		if x.Repeat != nil {
			r := *x.Repeat
			r.Exp, r.Series = Qualify(name, r.Exp), Qualify(name, r.Series)
			x.Repeat = &r
		}
		if len(x.Bench) > 0 {
			bs := slices.Clone(x.Bench)
			for j := range bs {
				bs[j].Exp = x.ID
			}
			x.Bench = bs
		}
		out[i] = x
	}
	return out
}

// Measured is the tok/s measured at commit (a full or short id) by exps:
// the median of the medians of the experiments with a result whose
// fingerprint has that HEAD and a clean tree (one launch, one sample),
// and how many there are (0: none was measured there).
func Measured(exps []ledger.Experiment, commit string) (median float64, n int) {
	if commit == "" {
		return 0, 0
	}
	var meds []float64
	for i := range exps {
		x := &exps[i]
		g := x.Git()
		if g == nil || g.Head == "" || g.PatchBytes > 0 || x.Result.N == 0 {
			continue
		}
		if strings.HasPrefix(g.Head, commit) || strings.HasPrefix(commit, g.Head) {
			meds = append(meds, x.Result.Median)
		}
	}
	if len(meds) == 0 {
		return 0, 0
	}
	return ledger.Median(meds), len(meds)
}

// MeasuredText is Measured in words: "89.4 tok/s n=2", "-" when none was
// measured at commit.
func MeasuredText(exps []ledger.Experiment, commit string) string {
	m, n := Measured(exps, commit)
	if n == 0 {
		return "-"
	}
	return strconv.FormatFloat(m, 'f', 1, 64) + " tok/s n=" + strconv.Itoa(n)
}
