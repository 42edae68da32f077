// Package journal is flightdeck's session journal, format v1: one
// append-only JSON Lines file per cockpit session — a header line, then one
// line per event of the stream, [t, "kind", data] with t in seconds since
// the header's created time (the spirit of asciicast v2). The format is
// documented in docs/journal-format.md.
//
// The package has the journal-native payloads (notes, experiments and
// their fingerprints and results, keys), the codec of every payload kind
// the cockpit publishes, a Writer (file mode 0600, one writer per file,
// losing nothing on a full disk), and a reader that tolerates a torn last
// line and garbled lines, skips unknown kinds, and indexes a file so that
// replay can seek to any time.
package journal

// FormatName is the header's "format" value.
const FormatName = "flightdeck-journal"

// FormatVersion is the format version this package writes and reads. A reader
// refuses a file with a higher version (ErrVersion).
const FormatVersion = 1
