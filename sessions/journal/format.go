package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// ErrNotJournal is wrapped by the errors of Open and Append for a file that
// is not a flightdeck journal (no header line, or a header of another
// format).
var ErrNotJournal = errors.New("not a flightdeck journal")

// VersionError is returned by Open and Append for a journal written in a
// newer format version than this flightdeck reads.
type VersionError struct {
	Path string
	Got  int // the file's version
	Max  int // FormatVersion
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("journal %s is format version %d; this flightdeck reads versions up to %d (upgrade flightdeck)", e.Path, e.Got, e.Max)
}

// encodeHeader is the header line, with its "\n".
func encodeHeader(h event.SessionHeader) ([]byte, error) {
	b, err := marshalJSON(h)
	if err != nil {
		return nil, fmt.Errorf("journal header: %w", err)
	}
	return append(b, '\n'), nil
}

// parseHeader reads the header line (without its "\n") of the file at path
// (for messages). Errors wrap ErrNotJournal, or are a *VersionError.
func parseHeader(path string, line []byte) (event.SessionHeader, error) {
	var h event.SessionHeader
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) == 0 || line[0] != '{' {
		return h, fmt.Errorf("%s: %w (the first line is not a JSON header object)", path, ErrNotJournal)
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, fmt.Errorf("%s: %w (header: %v)", path, ErrNotJournal, err)
	}
	if h.Format != FormatName {
		return h, fmt.Errorf("%s: %w (header format %q, want %q)", path, ErrNotJournal, h.Format, FormatName)
	}
	if h.Version > FormatVersion {
		return h, &VersionError{Path: path, Got: h.Version, Max: FormatVersion}
	}
	if h.Version < 1 {
		return h, fmt.Errorf("%s: %w (header version %d)", path, ErrNotJournal, h.Version)
	}
	if h.Created.IsZero() {
		return h, fmt.Errorf("%s: %w (header has no created time)", path, ErrNotJournal)
	}
	return h, nil
}

// marshalJSON is json.Marshal without HTML escaping (log text keeps its
// "<" and "&" readable).
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode adds a newline
}

// micros is an event time: microseconds since the header's created time.
type micros int64

// toMicros returns at - created rounded up to the microsecond: a replayed
// event is never earlier than the times its payload carries (a server
// status's Since, a sample's At), so no age shows negative in a replay.
func toMicros(at, created time.Time) micros {
	d := at.Sub(created)
	t := d / time.Microsecond
	if d%time.Microsecond > 0 {
		t++
	}
	return micros(t)
}

// Duration returns t as a time.Duration.
func (t micros) Duration() time.Duration { return time.Duration(t) * time.Microsecond }

// appendMicros writes t as seconds with at most 6 decimals, trailing zeros
// trimmed: 12.5, 0.000001, -3, 86399.999875.
func appendMicros(b []byte, t micros) []byte {
	u := int64(t)
	if u < 0 {
		b = append(b, '-')
		if u == math.MinInt64 {
			u++ // cannot negate; off by one microsecond at year ±292277
		}
		u = -u
	}
	b = strconv.AppendInt(b, u/1e6, 10)
	frac := u % 1e6
	if frac == 0 {
		return b
	}
	var d [7]byte
	d[0] = '.'
	for i := 6; i >= 1; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 7
	for d[n-1] == '0' {
		n--
	}
	return append(b, d[:n]...)
}

// parseMicros parses a JSON number of seconds into microseconds, rounding
// beyond the sixth decimal. The common form (-?digits(.digits)?, ≤ 6
// decimals) is parsed exactly without allocating.
func parseMicros(b []byte) (micros, bool) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		neg, i = true, 1
	}
	var sec int64
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i-start >= 12 {
			return parseMicrosSlow(b)
		}
		sec = sec*10 + int64(b[i]-'0')
	}
	if i == start {
		return 0, false
	}
	var frac int64
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if i-fs >= 6 {
				return parseMicrosSlow(b)
			}
			frac = frac*10 + int64(b[i]-'0')
		}
		if i == fs {
			return 0, false
		}
		for k := i - fs; k < 6; k++ {
			frac *= 10
		}
	}
	if i != len(b) {
		return parseMicrosSlow(b)
	}
	u := sec*1e6 + frac
	if u > maxMicros {
		return 0, false
	}
	if neg {
		u = -u
	}
	return micros(u), true
}

// maxMicros bounds event times so that they convert to a time.Duration:
// ±292 years, what a writer's saturated time.Sub gives at most.
const maxMicros = math.MaxInt64 / 1000

func parseMicrosSlow(b []byte) (micros, bool) {
	if len(b) == 0 || !json.Valid(b) || b[0] == '"' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.Abs(math.Round(f*1e6)) > maxMicros {
		return 0, false
	}
	return micros(math.Round(f * 1e6)), true
}

// frame is one event line split without decoding its data.
type frame struct {
	t    micros
	kind []byte // the kind string's bytes (no escapes allowed)
	data []byte // the raw JSON of the data element
}

// splitFrame splits `[t,"kind",data]` (no trailing "\n"). It checks the
// shape, not the data's JSON: a kind with escapes is refused (kinds are
// plain kebab-case).
func splitFrame(line []byte) (frame, bool) {
	var f frame
	line = bytes.TrimSuffix(line, []byte{'\r'})
	line = bytes.TrimSpace(line)
	if len(line) < 7 || line[0] != '[' || line[len(line)-1] != ']' {
		return f, false
	}
	rest := line[1 : len(line)-1]
	c := bytes.IndexByte(rest, ',')
	if c < 0 {
		return f, false
	}
	t, ok := parseMicros(bytes.TrimSpace(rest[:c]))
	if !ok {
		return f, false
	}
	rest = bytes.TrimLeft(rest[c+1:], " \t")
	if len(rest) == 0 || rest[0] != '"' {
		return f, false
	}
	q := bytes.IndexByte(rest[1:], '"')
	if q < 0 {
		return f, false
	}
	kind := rest[1 : 1+q]
	if bytes.IndexByte(kind, '\\') >= 0 {
		return f, false
	}
	rest = bytes.TrimLeft(rest[q+2:], " \t")
	if len(rest) == 0 || rest[0] != ',' {
		return f, false
	}
	data := bytes.TrimSpace(rest[1:])
	if len(data) == 0 {
		return f, false
	}
	f.t, f.kind, f.data = t, kind, data
	return f, true
}

// appendFrameStart writes `[t,"kind",` for an event line.
func appendFrameStart(b []byte, t micros, kind string) []byte {
	b = append(b, '[')
	b = appendMicros(b, t)
	b = append(b, ',', '"')
	b = append(b, kind...)
	return append(b, '"', ',')
}

// maxHeaderLine bounds the header line ReadHeader reads: a header is a few
// hundred bytes, so a longer first line is not one.
const maxHeaderLine = 64 << 10

// ReadHeader reads only the header (the first line) of the journal at
// path, without indexing the rest: what a listing of many journals needs.
// Errors wrap the open's (fs.ErrNotExist), ErrNotJournal (not a journal,
// an empty file, a first line over 64 KiB) or are a *VersionError.
func ReadHeader(path string) (event.SessionHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return event.SessionHeader{}, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	buf := make([]byte, maxHeaderLine)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return event.SessionHeader{}, fmt.Errorf("journal: %s: %w", path, err)
	}
	line, _, found := bytes.Cut(buf[:n], []byte{'\n'})
	if !found && n == maxHeaderLine {
		return event.SessionHeader{}, fmt.Errorf("%s: %w (the first line is over %d bytes)", path, ErrNotJournal, maxHeaderLine)
	}
	return parseHeader(path, line)
}
