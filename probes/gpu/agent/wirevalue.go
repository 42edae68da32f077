package agent

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The protocol's values of more than one JSON shape, with their own
// MarshalJSON and UnmarshalJSON, and the helpers they share.

// reading is an event.Reading: a JSON number when it holds a finite value,
// the token string when it holds none, else {"status":N,"raw":"…",
// "value":x}; left out when Absent.
type reading struct {
	r   event.Reading
	set bool // decoded: the key was there
}

func (w reading) get() event.Reading {
	if !w.set {
		return event.Reading{Status: event.CellAbsent}
	}
	return w.r
}

func (w reading) IsZero() bool {
	return w.r.Status == event.CellAbsent && w.r.Raw == "" && isPosZero(w.r.Value)
}

func (w reading) MarshalJSON() ([]byte, error) {
	r := w.r
	r.Raw = validString(r.Raw)
	switch {
	case r.Status == event.CellOK && r.Raw == "" && isFinite(r.Value):
		return json.Marshal(r.Value)
	case isPosZero(r.Value) && r.Status == rawStatus(r.Raw):
		return json.Marshal(r.Raw)
	}
	return json.Marshal(struct {
		Status event.CellStatus `json:"status"`
		Raw    string           `json:"raw,omitempty"`
		Value  numOrWord        `json:"value,omitzero"`
	}{r.Status, r.Raw, numOrWord(r.Value)})
}

func (w *reading) UnmarshalJSON(b []byte) error {
	if err := once(&w.set); err != nil {
		return err
	}
	switch b[0] {
	case '"':
		raw, err := jsonString(b)
		w.r = event.Reading{Status: rawStatus(raw), Raw: raw}
		return err
	case '{':
		var o struct {
			Status *event.CellStatus `json:"status"`
			Raw    wString           `json:"raw"`
			Value  numOrWord         `json:"value"`
		}
		if err := unmarshalValue(b, &o); err != nil {
			return err
		}
		if o.Status == nil {
			return errors.New(`reading object without "status"`)
		}
		w.r = event.Reading{Value: float64(o.Value), Status: *o.Status, Raw: string(o.Raw)}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return errors.New("expected a number, a string or a reading object")
	}
	w.r = event.Reading{Value: v}
	return nil
}

// numOrWord is a number, or one of the strings "nan", "inf", "-inf" that
// stand for the values JSON lacks.
type numOrWord float64

func (v numOrWord) IsZero() bool { return isPosZero(float64(v)) }

func (v numOrWord) MarshalJSON() ([]byte, error) {
	switch f := float64(v); {
	case math.IsNaN(f):
		return []byte(`"nan"`), nil
	case math.IsInf(f, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-inf"`), nil
	}
	return json.Marshal(float64(v))
}

func (v *numOrWord) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"nan"`:
		*v = numOrWord(math.NaN())
	case `"inf"`:
		*v = numOrWord(math.Inf(1))
	case `"-inf"`:
		*v = numOrWord(math.Inf(-1))
	default:
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return errors.New(`expected a number, "nan", "inf" or "-inf"`)
		}
		*v = numOrWord(f)
	}
	return nil
}

// text is an event.Text: its string when that reads back with the same
// Status, else {"status":N,"s":"…"}; left out when Absent and empty.
type text struct {
	t   event.Text
	set bool
}

func (w text) get() event.Text {
	if !w.set {
		return event.Text{Status: event.CellAbsent}
	}
	return w.t
}

func (w text) IsZero() bool { return w.t.Status == event.CellAbsent && w.t.S == "" }

func (w text) MarshalJSON() ([]byte, error) {
	t := w.t
	t.S = validString(t.S)
	if t.Status == textStatus(t.S) {
		return json.Marshal(t.S)
	}
	return json.Marshal(struct {
		Status event.CellStatus `json:"status"`
		S      string           `json:"s"`
	}{t.Status, t.S})
}

func (w *text) UnmarshalJSON(b []byte) error {
	if err := once(&w.set); err != nil {
		return err
	}
	if b[0] != '{' {
		s, err := jsonString(b)
		w.t = event.Text{S: s, Status: textStatus(s)}
		return err
	}
	var o struct {
		Status *event.CellStatus `json:"status"`
		S      wString           `json:"s"`
	}
	if err := unmarshalValue(b, &o); err != nil {
		return err
	}
	if o.Status == nil {
		return errors.New(`text object without "status"`)
	}
	w.t = event.Text{S: string(o.S), Status: *o.Status}
	return nil
}

// clockEvents is an event.ClockEvents: the bitmask as a number, a token
// string, or {"status":N,"raw":"…","mask":M}; left out when Absent.
type clockEvents struct {
	c   event.ClockEvents
	set bool
}

func (w clockEvents) get() event.ClockEvents {
	if !w.set {
		return event.ClockEvents{Status: event.CellAbsent}
	}
	return w.c
}

func (w clockEvents) IsZero() bool {
	return w.c.Status == event.CellAbsent && w.c.Raw == "" && w.c.Mask == 0
}

func (w clockEvents) MarshalJSON() ([]byte, error) {
	c := w.c
	c.Raw = validString(c.Raw)
	switch {
	case c.Status == event.CellOK && c.Raw == "":
		return json.Marshal(uint64(c.Mask))
	case c.Mask == 0 && c.Status == rawStatus(c.Raw):
		return json.Marshal(c.Raw)
	}
	return json.Marshal(struct {
		Status event.CellStatus `json:"status"`
		Raw    string           `json:"raw,omitempty"`
		Mask   uint64           `json:"mask,omitempty"`
	}{c.Status, c.Raw, uint64(c.Mask)})
}

func (w *clockEvents) UnmarshalJSON(b []byte) error {
	if err := once(&w.set); err != nil {
		return err
	}
	switch b[0] {
	case '"':
		raw, err := jsonString(b)
		w.c = event.ClockEvents{Status: rawStatus(raw), Raw: raw}
		return err
	case '{':
		var o struct {
			Status *event.CellStatus `json:"status"`
			Raw    wString           `json:"raw"`
			Mask   wUint64           `json:"mask"`
		}
		if err := unmarshalValue(b, &o); err != nil {
			return err
		}
		if o.Status == nil {
			return errors.New(`clock_events object without "status"`)
		}
		w.c = event.ClockEvents{Mask: event.ClockEventReason(o.Mask), Status: *o.Status, Raw: string(o.Raw)}
		return nil
	}
	m, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return errors.New("expected a bitmask (a non-negative integer), a string or an object")
	}
	w.c = event.ClockEvents{Mask: event.ClockEventReason(m)}
	return nil
}

// wireTime is a time: Unix nanoseconds, or [seconds, nanoseconds] outside
// the years 1678–2262 that int64 nanoseconds cover; left out when zero.
type wireTime struct {
	t   time.Time
	set bool
}

func (w wireTime) IsZero() bool { return w.t.IsZero() }

func (w wireTime) MarshalJSON() ([]byte, error) {
	if ns := w.t.UnixNano(); time.Unix(0, ns).Equal(w.t) {
		return strconv.AppendInt(nil, ns, 10), nil
	}
	return json.Marshal([2]int64{w.t.Unix(), int64(w.t.Nanosecond())})
}

func (w *wireTime) UnmarshalJSON(b []byte) error {
	if err := once(&w.set); err != nil {
		return err
	}
	if b[0] != '[' {
		ns, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return errors.New("expected a time: Unix nanoseconds or [seconds, nanoseconds]")
		}
		w.t = time.Unix(0, ns)
		return nil
	}
	var a []int64
	if err := unmarshalValue(b, &a); err != nil {
		return err
	}
	switch {
	case len(a) != 2:
		return errors.New("expected a time: [seconds, nanoseconds]")
	case a[1] < 0 || a[1] >= 1e9:
		return errors.New("nanoseconds out of range")
	}
	w.t = time.Unix(a[0], a[1])
	return nil
}

// once marks a key with its own decoder as read, and refuses it the
// second time in an object: the agent never repeats a key, and a line that
// does could make the decoder do a line's length of allocating work per
// byte.
func once(set *bool) error {
	if *set {
		return errors.New("a key repeated in one object")
	}
	*set = true
	return nil
}

// errValue is an error inside a value, whose encoding/json offset would be
// the value's, not the line's.
type errValue struct{ msg string }

func (e *errValue) Error() string { return e.msg }

// unmarshalValue decodes a value (b, which encoding/json has checked) of
// a line into v.
func unmarshalValue(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		if _, ok := err.(*errValue); ok {
			return err
		}
		return &errValue{err.Error()}
	}
	return nil
}

// jsonString decodes b, a JSON string encoding/json has checked. A string
// of printable ASCII without escapes, what the agent mostly sends, is its
// bytes; others are encoding/json's to decode (escapes, invalid UTF-8 as
// U+FFFD).
func jsonString(b []byte) (string, error) {
	if len(b) < 2 || b[0] != '"' {
		return "", errors.New("expected a string")
	}
	in := b[1 : len(b)-1]
	for _, c := range in {
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			var s string
			err := unmarshalValue(b, &s)
			return s, err
		}
	}
	return string(in), nil
}

// validString returns s with each byte that is not valid UTF-8 replaced by
// U+FFFD, as a reader decodes it: so an encoded line reads back as what
// it says, and encodes again to the same bytes.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}

// wireString is s as a plain string value, invalid UTF-8 replaced
// (validString).
func wireString(s string) wString { return wString(validString(s)) }

func isPosZero(v float64) bool { return math.Float64bits(v) == 0 }

func isFinite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// tokenStatus classifies a non-value token as probes/gpu does for
// nvidia-smi's cells: ok is false when s is not one.
func tokenStatus(s string) (st event.CellStatus, ok bool) {
	switch s {
	case "":
		return event.CellEmpty, true
	case "[N/A]", "N/A":
		return event.CellNA, true
	case "[Not Supported]":
		return event.CellNotSupported, true
	case "[Unknown Error]":
		return event.CellUnknownError, true
	case "[GPU is lost]":
		return event.CellLost, true
	case "ERR!":
		return event.CellErr, true
	case "[Requested functionality has been deprecated]":
		return event.CellDeprecated, true
	}
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return event.CellOther, true
	}
	return event.CellOK, false
}

// rawStatus is the Status a Reading or ClockEvents written as the string
// raw reads back with: its token's, else Invalid (garbled text).
func rawStatus(raw string) event.CellStatus {
	if st, ok := tokenStatus(raw); ok {
		return st
	}
	return event.CellInvalid
}

// textStatus is the Status a Text written as the string s reads back with:
// its token's, else OK.
func textStatus(s string) event.CellStatus {
	st, _ := tokenStatus(s)
	return st
}

// The plain values of a line (numbers, booleans, strings, statuses) refuse
// null. encoding/json reads null into one as its zero value, which would be
// a silently wrong value (an Xid code 0, a GPU not lost, process id 0); the
// agent never writes null: a value it could not read is a key left out or
// a status. Keys a reader does not know may hold anything, null included.
type (
	wInt    int
	wInt64  int64
	wUint64 uint64
	wBool   bool
	wString string
	wStatus event.CellStatus
)

func (v *wInt) UnmarshalJSON(b []byte) error    { return notNull(b, (*int)(v)) }
func (v *wInt64) UnmarshalJSON(b []byte) error  { return notNull(b, (*int64)(v)) }
func (v *wUint64) UnmarshalJSON(b []byte) error { return notNull(b, (*uint64)(v)) }
func (v *wBool) UnmarshalJSON(b []byte) error   { return notNull(b, (*bool)(v)) }
func (v *wStatus) UnmarshalJSON(b []byte) error { return notNull(b, (*event.CellStatus)(v)) }

func (v *wString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return errNull
	}
	s, err := jsonString(b)
	*v = wString(s)
	return err
}

// errNull is the error of a known key whose value is null.
var errNull = &errValue{"null where a value belongs (the protocol leaves out a value it did not read)"}

// notNull decodes b into v, refusing null.
func notNull[T any](b []byte, v *T) error {
	if string(b) == "null" {
		return errNull
	}
	return unmarshalValue(b, v)
}
