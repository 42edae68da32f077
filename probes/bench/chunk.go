package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// ChunkError is an SSE event that is not a valid completion chunk: not
// JSON, not an object, or a field of the wrong type (content that is not a
// string, a negative or fractional token count).
type ChunkError struct {
	Msg string
}

func (e *ChunkError) Error() string { return "bad stream chunk: " + e.Msg }

// maxCount bounds a usage count: anything larger is not a real count.
const maxCount = 1<<31 - 1

// maxDepth bounds JSON nesting, as encoding/json does.
const maxDepth = 10000

// decodeChunk reads one chunk's JSON into c (reset by the caller). It only
// looks at the fields a benchmark needs and skips (but validates) the
// rest; it allocates nothing on success. Precedence of failures: invalid
// JSON, then an error the server sent, then a field of the wrong type.
func decodeChunk(b []byte, c *Chunk) error {
	p := scanner{b: b}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		if err := p.skip(); err != nil {
			return &ChunkError{Msg: err.Error()}
		}
		if p.ws(); p.i < len(p.b) {
			return &ChunkError{Msg: p.fail("data after the value").Error()}
		}
		return &ChunkError{Msg: "not a JSON object"}
	}
	var (
		fieldErr string // first field of the wrong type
		errAt    = -1   // offset of a non-null "error" value
		objErr   bool   // top-level "object": "error"
	)
	bad := func(msg string) {
		if fieldErr == "" {
			fieldErr = msg
		}
	}
	err := p.object(func(key []byte) error {
		switch string(key) {
		case "id":
			c.ID = nil
			if p.peek() == '"' {
				raw, err := p.str()
				c.ID = raw
				return err
			}
			return p.skip()
		case "choices":
			c.Choices, c.Text, c.Delta, c.Reasoning, c.Role, c.Finish = 0, nil, nil, nil, nil, nil
			switch p.peek() {
			case 'n':
				return p.skip()
			case '[':
				return p.array(func(i int) error {
					c.Choices++
					if i > 0 {
						return p.skip()
					}
					return p.choice(c, bad)
				})
			}
			bad("choices is not a list")
			return p.skip()
		case "usage":
			c.Usage = Usage{}
			switch p.peek() {
			case 'n':
				return p.skip()
			case '{':
				return p.usage(&c.Usage, bad)
			}
			bad("usage is not an object")
			return p.skip()
		case "error":
			errAt = -1
			if p.peek() != 'n' {
				errAt = p.i
			}
			return p.skip()
		case "object":
			objErr = false
			if p.peek() == '"' {
				raw, err := p.str()
				objErr = string(raw) == "error"
				return err
			}
			return p.skip()
		}
		return p.skip()
	})
	if err == nil {
		if p.ws(); p.i < len(p.b) {
			err = p.fail("data after the object")
		}
	}
	if err != nil {
		return &ChunkError{Msg: err.Error()}
	}
	if errAt >= 0 {
		return apiError(b[errAt:])
	}
	if objErr {
		return apiError(b)
	}
	if fieldErr != "" {
		return &ChunkError{Msg: fieldErr}
	}
	return nil
}

// apiError decodes an error value (an object with message/type/code, or a
// string) that the scanner already found valid. It allocates: errors are
// rare.
func apiError(b []byte) *APIError {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return &APIError{Message: "(unreadable error)"}
	}
	switch v := v.(type) {
	case string:
		return &APIError{Message: v}
	case map[string]any:
		e := &APIError{}
		e.Message, _ = v["message"].(string)
		e.Type, _ = v["type"].(string)
		if n, ok := v["code"].(json.Number); ok {
			if i, err := strconv.Atoi(string(n)); err == nil {
				e.Code = i
			}
		}
		return e
	}
	return &APIError{Message: "(unreadable error)"}
}

// choice reads choices[0].
func (p *scanner) choice(c *Chunk, bad func(string)) error {
	switch p.peek() {
	case 'n':
		return p.skip()
	case '{':
	default:
		bad("choices[0] is not an object")
		return p.skip()
	}
	return p.object(func(key []byte) error {
		switch string(key) {
		case "text":
			return p.text(&c.Text, "choices[0].text", bad)
		case "finish_reason":
			return p.optStr(&c.Finish)
		case "delta":
			c.Delta, c.Reasoning, c.Role = nil, nil, nil
			switch p.peek() {
			case 'n':
				return p.skip()
			case '{':
			default:
				bad("choices[0].delta is not an object")
				return p.skip()
			}
			return p.object(func(key []byte) error {
				switch string(key) {
				case "content":
					return p.text(&c.Delta, "choices[0].delta.content", bad)
				case "reasoning_content":
					return p.text(&c.Reasoning, "choices[0].delta.reasoning_content", bad)
				case "role":
					return p.optStr(&c.Role)
				}
				return p.skip()
			})
		}
		return p.skip()
	})
}

// text reads a string-or-null content field.
func (p *scanner) text(dst *[]byte, name string, bad func(string)) error {
	*dst = nil
	switch p.peek() {
	case '"':
		raw, err := p.str()
		*dst = raw
		return err
	case 'n':
		return p.skip()
	}
	bad(name + " is not a string")
	return p.skip()
}

// optStr reads a string into dst; any other value leaves it nil.
func (p *scanner) optStr(dst *[]byte) error {
	*dst = nil
	if p.peek() == '"' {
		raw, err := p.str()
		*dst = raw
		return err
	}
	return p.skip()
}

// usage reads a usage object's token counts.
func (p *scanner) usage(u *Usage, bad func(string)) error {
	var prompt, completion = -1, -1
	err := p.object(func(key []byte) error {
		var dst *int
		switch string(key) {
		case "prompt_tokens":
			dst = &prompt
		case "completion_tokens":
			dst = &completion
		default:
			return p.skip()
		}
		*dst = -1
		if p.peek() == 'n' {
			return p.skip()
		}
		start := p.i
		if err := p.skip(); err != nil {
			return err
		}
		n, ok := count(p.b[start:p.i])
		if !ok {
			bad(fmt.Sprintf("usage.%s is not a token count: %.40s", key, p.b[start:p.i]))
			return nil
		}
		*dst = n
		return nil
	})
	if prompt >= 0 && completion >= 0 {
		*u = Usage{PromptTokens: prompt, CompletionTokens: completion, OK: true}
	}
	return err
}

// count parses a JSON value that must be a non-negative integer without
// fraction or exponent, at most maxCount.
func count(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	n := 0
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int(ch-'0')
	}
	return n, n <= maxCount
}

// scanner is a validating JSON reader over one chunk: it checks the full
// JSON grammar (as encoding/json.Valid does) but decodes only what its
// callers ask for.
type scanner struct {
	b     []byte
	i     int
	depth int
}

type syntaxError struct {
	msg string
	at  int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("invalid JSON at byte %d: %s", e.at, e.msg) }

func (p *scanner) fail(msg string) error { return &syntaxError{msg: msg, at: p.i} }

func (p *scanner) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace (0 at the end).
func (p *scanner) peek() byte {
	p.ws()
	if p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

// object reads an object, calling fn with each key (raw, escapes not
// decoded) positioned at its value; fn must consume the value.
func (p *scanner) object(fn func(key []byte) error) error {
	if p.peek() != '{' {
		return p.fail("want an object")
	}
	if p.depth++; p.depth > maxDepth {
		return p.fail("nested too deep")
	}
	p.i++
	if p.peek() == '}' {
		p.i++
		p.depth--
		return nil
	}
	for {
		if p.peek() != '"' {
			return p.fail("want a key")
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(decodeJSONString(key)) // rare: an escaped key
		}
		if p.peek() != ':' {
			return p.fail("want ':'")
		}
		p.i++
		if p.peek() == 0 {
			return p.fail("unexpected end")
		}
		if err := fn(key); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			return nil
		default:
			return p.fail("want ',' or '}'")
		}
	}
}

// array reads an array, calling fn with each index positioned at the
// element; fn must consume it.
func (p *scanner) array(fn func(i int) error) error {
	if p.peek() != '[' {
		return p.fail("want a list")
	}
	if p.depth++; p.depth > maxDepth {
		return p.fail("nested too deep")
	}
	p.i++
	if p.peek() == ']' {
		p.i++
		p.depth--
		return nil
	}
	for i := 0; ; i++ {
		if p.peek() == 0 {
			return p.fail("unexpected end")
		}
		if err := fn(i); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			return nil
		default:
			return p.fail("want ',' or ']'")
		}
	}
}

// str reads a string and returns its contents between the quotes.
func (p *scanner) str() ([]byte, error) {
	if p.peek() != '"' {
		return nil, p.fail("want a string")
	}
	p.i++
	start := p.i
	for p.i < len(p.b) {
		ch := p.b[p.i]
		switch {
		case ch == '"':
			raw := p.b[start:p.i:p.i]
			p.i++
			return raw, nil
		case ch == '\\':
			p.i++
			if p.i >= len(p.b) {
				return nil, p.fail("unterminated string")
			}
			switch p.b[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				if p.i+4 >= len(p.b) {
					return nil, p.fail("short \\u escape")
				}
				for _, h := range p.b[p.i+1 : p.i+5] {
					if !isHex(h) {
						return nil, p.fail("bad \\u escape")
					}
				}
				p.i += 5
			default:
				return nil, p.fail("bad escape")
			}
		case ch < 0x20:
			return nil, p.fail("control character in string")
		default:
			p.i++
		}
	}
	return nil, p.fail("unterminated string")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skip reads any value.
func (p *scanner) skip() error {
	switch c := p.peek(); {
	case c == '{':
		return p.object(func([]byte) error { return p.skip() })
	case c == '[':
		return p.array(func(int) error { return p.skip() })
	case c == '"':
		_, err := p.str()
		return err
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 0:
		return p.fail("unexpected end")
	}
	return p.fail("unexpected character")
}

func (p *scanner) lit(s string) error {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return p.fail("bad literal")
	}
	p.i += len(s)
	return nil
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *scanner) number() error {
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case digits() == 0:
		return p.fail("bad number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return p.fail("bad number")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return p.fail("bad number")
		}
	}
	return nil
}
