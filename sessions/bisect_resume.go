package sessions

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// ResumeLast is BisectConfig.Resume's value for the last bisect of the
// journal that has no final end.
const ResumeLast = "last"

// ErrNoBisectToResume is returned by Bisect with Resume when the journal
// holds no bisect that can be continued.
var ErrNoBisectToResume = errors.New("bisect: the journal holds no unfinished bisect to resume")

// finalOutcome reports a bisect-end after which there is nothing to
// resume.
func finalOutcome(kind string) bool {
	switch kind {
	case event.BisectCulprit, event.BisectNoDifference, event.BisectNotSingleStep, event.BisectFailed:
		return true
	}
	return false
}

// BisectRecords are the bisect records of a journal, in order.
type BisectRecords struct {
	Starts   []event.BisectStart
	Launches []event.BisectLaunch
	Ends     []event.BisectEnd
}

// add files one event's payload; other kinds are ignored.
func (r *BisectRecords) add(p event.Payload) {
	if s, ok := p.(event.BisectStart); ok {
		r.Starts = append(r.Starts, s)
	} else if l, ok := p.(event.BisectLaunch); ok {
		r.Launches = append(r.Launches, l)
	} else if e, ok := p.(event.BisectEnd); ok {
		r.Ends = append(r.Ends, e)
	}
}

// ReadBisects reads the bisect records of the journal at path.
func ReadBisects(path string) (BisectRecords, error) {
	var r BisectRecords
	j, err := journal.Open(path)
	if err != nil {
		return r, err
	}
	defer j.Close()
	err = j.ScanKinds(func(e event.Event) error { r.add(e.Data); return nil },
		event.KindBisectStart, event.KindBisectLaunch, event.KindBisectEnd)
	return r, err
}

// Unfinished is the last bisect-start with no final bisect-end (with id:
// that bisect's, when it is unfinished), and its launches; false when
// there is none.
func (r BisectRecords) Unfinished(id string) (event.BisectStart, []event.BisectLaunch, bool) {
	for i := len(r.Starts) - 1; i >= 0; i-- {
		s := r.Starts[i]
		if id != "" && id != ResumeLast && s.ID != id {
			continue
		}
		if slices.ContainsFunc(r.Ends, func(e event.BisectEnd) bool { return e.ID == s.ID && finalOutcome(e.Outcome) }) {
			if id != "" && id != ResumeLast {
				return s, nil, false
			}
			continue
		}
		var ls []event.BisectLaunch
		for _, l := range r.Launches {
			if l.ID == s.ID {
				ls = append(ls, l)
			}
		}
		return s, ls, true
	}
	return event.BisectStart{}, nil, false
}

// resumed is a bisect found to resume; foreign when it was read from
// another journal than the session's own.
type resumed struct {
	start    event.BisectStart
	launches []event.BisectLaunch
	foreign  bool
}

// records are the bisect records of the session's own journal: the
// file's from earlier sessions, then this session's.
func (b *bisecter) records() (BisectRecords, error) {
	var r BisectRecords
	if b.Journal != "" {
		j, err := journal.Open(b.Journal)
		if err != nil {
			return r, err
		}
		err = j.ScanKinds(func(e event.Event) error {
			if b.Opened.IsZero() || e.At.Before(b.Opened) {
				r.add(e.Data)
			}
			return nil
		}, event.KindBisectStart, event.KindBisectLaunch, event.KindBisectEnd)
		j.Close()
		if err != nil {
			return r, err
		}
	}
	b.mu.Lock()
	for _, e := range b.own {
		r.add(e.Data)
	}
	b.mu.Unlock()
	return r, nil
}

// resumable finds the bisect cfg.Resume names: in cfg.From's journal when
// set, else in the session's own.
func (b *bisecter) resumable(cfg BisectConfig) (resumed, error) {
	var (
		r   BisectRecords
		err error
	)
	foreign := cfg.From != "" && cfg.From != b.Journal
	if foreign {
		r, err = ReadBisects(cfg.From)
	} else {
		r, err = b.records()
	}
	if err != nil {
		return resumed{}, fmt.Errorf("bisect: reading the journal: %w", err)
	}
	s, ls, ok := r.Unfinished(cfg.Resume)
	if !ok {
		if cfg.Resume != ResumeLast {
			return resumed{}, fmt.Errorf("bisect %s: not found unfinished in the journal: %w", cfg.Resume, ErrNoBisectToResume)
		}
		return resumed{}, ErrNoBisectToResume
	}
	if foreign {
		// Its id must not clash with one of the own journal's.
		own, err := b.records()
		if err != nil {
			return resumed{}, err
		}
		if slices.ContainsFunc(own.Starts, func(o event.BisectStart) bool { return o.ID == s.ID }) {
			return resumed{}, fmt.Errorf("bisect %s: this journal holds another bisect of that id: resume it with --journal %s", s.ID, cfg.From)
		}
	}
	return resumed{start: s, launches: ls, foreign: foreign}, nil
}

// nextID is the next bisect id of the own journal: "b" and one more than
// the highest number there.
func (b *bisecter) nextID() (string, error) {
	r, err := b.records()
	if err != nil {
		return "", fmt.Errorf("bisect: reading the journal: %w", err)
	}
	n := 0
	for _, s := range r.Starts {
		if k, err := strconv.Atoi(strings.TrimPrefix(s.ID, "b")); err == nil && strings.HasPrefix(s.ID, "b") {
			n = max(n, k)
		}
	}
	return "b" + strconv.Itoa(n+1), nil
}
