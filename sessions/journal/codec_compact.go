package journal

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/remote/jsonappend"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// tok-rate data: [tok/s, ranks] then, when set, dropped (0/1) and the
// accept length: [1523.4,2], [3.1,1,1], [880,2,0,3.52].
func encRate(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	r, err := payloadAs[event.TokRate](p)
	if err != nil {
		return b, err
	}
	b = append(b, '[')
	b = jsonappend.Float(b, r.TokPerSec)
	b = append(b, ',')
	b = jsonappend.Float(b, float64(r.Ranks))
	if r.Dropped || r.HasAccept || r.AcceptLength != 0 {
		if r.Dropped {
			b = append(b, ",1"...)
		} else {
			b = append(b, ",0"...)
		}
	}
	if r.HasAccept || r.AcceptLength != 0 {
		b = append(b, ',')
		b = jsonappend.Float(b, r.AcceptLength)
		if !r.HasAccept {
			b = append(b, ",0"...) // an accept length without HasAccept: kept as is
		}
	}
	return append(b, ']'), nil
}

func decRate(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
	var arr [5][]byte
	el, err := splitArray(data, arr[:0])
	if err != nil || len(el) < 2 || len(el) > 5 {
		return nil, fmt.Errorf("tok-rate: %w", errSyntax)
	}
	var r event.TokRate
	var ok bool
	if r.TokPerSec, ok = parseNum(el[0]); !ok {
		return nil, fmt.Errorf("tok-rate: %w", errSyntax)
	}
	n, ok := parseInt(el[1])
	if !ok {
		return nil, fmt.Errorf("tok-rate ranks: %w", errSyntax)
	}
	r.Ranks = int(n)
	if len(el) > 2 {
		switch string(el[2]) {
		case "0":
		case "1":
			r.Dropped = true
		default:
			return nil, fmt.Errorf("tok-rate dropped: %w", errSyntax)
		}
	}
	if len(el) > 3 {
		if r.AcceptLength, ok = parseNum(el[3]); !ok {
			return nil, fmt.Errorf("tok-rate accept: %w", errSyntax)
		}
		r.HasAccept = len(el) == 4
		if len(el) == 5 && string(el[4]) != "0" {
			return nil, fmt.Errorf("tok-rate: %w", errSyntax) // the encoder writes only 0 there
		}
	}
	return r, nil
}

// log-lines data: [path, first offset, line, line, ...]. A line is a JSON
// string when its bytes are valid UTF-8 (escape codes kept, as \u001b), else
// {"b": base64 of the bytes}; its offset is implied (the previous line's
// offset + length + 1) unless given: {"o": offset, "t": text} or {"o":
// offset, "b": base64}.
func encLines(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	ls, err := payloadAs[event.LogLines](p)
	if err != nil {
		return b, err
	}
	b = append(b, '[')
	b = jsonappend.String(b, ls.Path)
	b = append(b, ',')
	var next int64
	if len(ls.Lines) > 0 {
		next = ls.Lines[0].Offset
	}
	b = jsonappend.Float(b, float64(next))
	for _, l := range ls.Lines {
		b = append(b, ',')
		valid := utf8.Valid(l.Text)
		if l.Offset == next {
			if valid {
				b = jsonappend.String(b, l.Text)
			} else {
				b = append(b, `{"b":"`...)
				b = base64.StdEncoding.AppendEncode(b, l.Text)
				b = append(b, `"}`...)
			}
		} else {
			b = append(b, `{"o":`...)
			b = jsonappend.Float(b, float64(l.Offset))
			if valid {
				b = append(b, `,"t":`...)
				b = jsonappend.String(b, l.Text)
			} else {
				b = append(b, `,"b":"`...)
				b = base64.StdEncoding.AppendEncode(b, l.Text)
				b = append(b, '"')
			}
			b = append(b, '}')
		}
		next = l.Offset + int64(len(l.Text)) + 1
	}
	return append(b, ']'), nil
}

// lineJSON is the object form of a log line.
type lineJSON struct {
	O *int64  `json:"o"`
	T *string `json:"t"`
	B []byte  `json:"b"` // base64
}

// decLines reads both layouts: v1's [path, offset, line...] (a string
// first) and v2's [flags, ...] (a number first: decLinesV2).
func decLines(st *decState, _ time.Time, data []byte) (event.Payload, error) {
	el, err := splitArray(data, nil)
	if err == nil && len(el) >= 1 && len(el[0]) > 0 && el[0][0] != '"' {
		if st == nil {
			st = &decState{}
		}
		ls, err := decLinesV2(&st.log, el)
		if err != nil {
			return nil, err
		}
		return ls, nil
	}
	if err != nil || len(el) < 2 {
		return nil, fmt.Errorf("log-lines: %w", errSyntax)
	}
	var ls event.LogLines
	var ok bool
	if ls.Path, ok = parseString(el[0]); !ok {
		return nil, fmt.Errorf("log-lines path: %w", errSyntax)
	}
	next, ok := parseInt(el[1])
	if !ok {
		return nil, fmt.Errorf("log-lines offset: %w", errSyntax)
	}
	el = el[2:]
	if len(el) > 0 {
		ls.Lines = make([]event.LogLine, len(el))
	}
	for i, e := range el {
		l := &ls.Lines[i]
		l.Offset = next
		switch e[0] {
		case '"':
			s, ok := parseString(e)
			if !ok {
				return nil, fmt.Errorf("log-lines line %d: %w", i+1, errSyntax)
			}
			l.Text = []byte(s)
		case '{':
			var o lineJSON
			if err := json.Unmarshal(e, &o); err != nil || (o.T == nil) == (o.B == nil) {
				return nil, fmt.Errorf("log-lines line %d: %w", i+1, errSyntax)
			}
			if o.O != nil {
				l.Offset = *o.O
			}
			if o.T != nil {
				l.Text = []byte(*o.T)
			} else {
				l.Text = o.B
			}
		default:
			return nil, fmt.Errorf("log-lines line %d: %w", i+1, errSyntax)
		}
		next = l.Offset + int64(len(l.Text)) + 1
	}
	return ls, nil
}
