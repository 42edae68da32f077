// Package journal is flightdeck's session journal, format v2 (reading v1
// too): one
// append-only JSON Lines file per cockpit session — a header line, then one
// line per event of the stream, [t, "kind", data] with t in seconds since
// the header's created time (the spirit of asciicast v2). The format is
// documented in docs/journal-format.md.
//
// The package has the file format and nothing above it: the codec of every
// payload kind the cockpit journals (the kinds are package event's), a
// Writer (Create, Append: file mode 0600, one writer per file under a lock,
// losing nothing on a full disk), a reader (Open) that tolerates a torn
// last line and garbled lines, skips unknown kinds, and indexes a file so
// that replay can seek to any time (Journal.CatchUp) and mark experiments,
// notes and sessions on its timeline (Journal.Marks), and where journals go
// (DefaultDir, NewPath). What the events mean is read elsewhere: the
// experiments by package ledger, comparisons by package compare, reports
// by package report.
package journal

// FormatName is the header's "format" value.
const FormatName = "flightdeck-journal"

// FormatVersion is the format version this package writes and reads (and
// every version before it). A reader refuses a file with a higher version
// (VersionError). Version 2 stores a log line once and the events derived
// from it on its line (docs/journal-format.md).
const FormatVersion = 2
