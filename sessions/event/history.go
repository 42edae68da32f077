package event

// History is what earlier sessions recorded about this session's host: the
// experiments of the host's other journals and of the session's own
// journal before this session appended to it. It is a screen-only event
// payload (kind "history"), published once at session start by the
// session (sessions.LoadHistory), never journaled: it is derived from the
// other files, each of which holds it already.
type History struct {
	// Journals are the earlier journals, newest first (by the session
	// start their header records, then modification time), the
	// session's own file among them when it held experiments before this
	// session (Own).
	Journals []HistoryJournal
	// More counts the host's journals left out by the cap (the oldest,
	// unread: some may hold no experiment).
	More int
	// Errors are the journals that could not be read, one line each
	// ("2026-12-01-101500-demo: permission denied").
	Errors []string
}

// HistoryJournal is one earlier journal of the host: its name, header and
// the ledger's events for its experiments, as the ledger folds them.
type HistoryJournal struct {
	// Name is the journal's short name (its file name without ".jsonl"):
	// what qualifies its experiment ids ("2026-12-01-101500-demo:e3").
	Name string
	// Path is the journal's absolute path.
	Path string
	// Own says this is the session's own journal (--journal SAME_FILE):
	// its experiments keep their plain ids (the session continues their
	// numbering) and only what earlier sessions wrote is here.
	Own bool
	// Header is the header of the journal (the session that created it).
	Header SessionHeader
	// Events are the events that rebuild its experiments in a ledger:
	// exp-start, exp-repeat, exp-fingerprint, bench-done, note and
	// exp-end per experiment (each ended, with its final result), and the
	// journal's last exp-baseline: experiment by experiment in start
	// order, each one's events in time order. Their experiment ids are
	// qualified ("NAME:e3") unless Own.
	Events []Event
}
