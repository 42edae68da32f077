package sessions

// The host's history: the experiments earlier sessions recorded for the
// host (its other journals, and the session's own file before it
// appended), loaded once in the background and published as one
// event.History for the screen.

import (
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// loadedHistory is what LoadHistory loaded: the payload published and
// the ids of its experiments (qualified, or plain for the own file's).
type loadedHistory struct {
	h   event.History
	ids map[string]bool
}

// LoadHistory loads, in a goroutine of its own, the experiments earlier
// sessions recorded for the session's host (history.Collect over the
// journals directory — JournalOptions.Dir, else journal.DefaultDir — and
// the session's own --journal file, at most history.DefaultLimit
// journals) and publishes them as one event.History, which the screen
// folds (the experiments panel lists them; B and c take them). Call it once
// the screen subscribed; later calls do nothing. done, when given, is
// closed once the event is published (tests).
func (s *Session) LoadHistory(done ...chan struct{}) {
	s.histOnce.Do(func() {
		// Close waits for it (waitSince): nothing reads journals after
		// the session.
		s.bgMu.Lock()
		if s.closing {
			s.bgMu.Unlock()
			return
		}
		s.bg.Add(1)
		s.bgMu.Unlock()
		go func() {
			defer s.bg.Done()
			h := s.collectHistory()
			s.hist.Store(&loadedHistory{h: h, ids: historyIDs(h)})
			s.Publish(event.Event{At: time.Now(), Data: h})
			for _, d := range done {
				close(d)
			}
		}()
	})
}

// collectHistory is LoadHistory's work, done where it is called.
func (s *Session) collectHistory() event.History {
	dir := s.opts.Journal.Dir
	if dir == "" {
		dir, _ = journal.DefaultDir()
	}
	var own history.Own
	if s.rec != nil {
		own = history.Own{Path: s.rec.w.Path(), Header: s.rec.hdr}
	}
	h, err := history.Collect(dir, s.opts.Header.Host, own, 0)
	if err != nil {
		h.Errors = append(h.Errors, sanitize.String(err.Error()))
	}
	return h
}

// historyIDs are the experiment ids of h's journals.
func historyIDs(h event.History) map[string]bool {
	ids := map[string]bool{}
	for _, j := range h.Journals {
		for _, e := range j.Events {
			if st, ok := e.Data.(event.ExperimentStart); ok {
				ids[st.ID] = true
			}
		}
	}
	return ids
}

// History is what LoadHistory loaded; ok is false until it has.
func (s *Session) History() (h event.History, ok bool) {
	if lh := s.hist.Load(); lh != nil {
		return lh.h, true
	}
	return event.History{}, false
}

// HistoryExperiments are the earlier journals' experiments (history.Fold),
// nil until LoadHistory has loaded them.
func (s *Session) HistoryExperiments() []ledger.Experiment {
	lh := s.hist.Load()
	if lh == nil {
		return nil
	}
	return history.Experiments(history.Fold(lh.h))
}

// knownPrior reports whether id names an experiment recorded before this
// session: in its own journal (Lab.Prior), or one of the host's history,
// qualified ("2026-12-01-101500-demo:e3"), once LoadHistory loaded it.
func (s *Session) knownPrior(id string) bool {
	if s.rec != nil && s.rec.known(id) {
		return true
	}
	lh := s.hist.Load()
	return lh != nil && lh.ids[id]
}

// SetHistory makes h the session's history, as LoadHistory would, without
// publishing it: for a command that collected it itself (history.Collect,
// or the one journal it names), so that B may name its experiments.
func (s *Session) SetHistory(h event.History) {
	s.hist.Store(&loadedHistory{h: h, ids: historyIDs(h)})
}
