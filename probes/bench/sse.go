package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxEventBytes bounds one SSE event (its data lines together); a longer
// one fails the stream with ErrEventTooLong rather than growing without end.
const MaxEventBytes = 8 << 20

// ErrEventTooLong is returned by StreamReader.Next for an event whose data
// exceeds MaxEventBytes.
var ErrEventTooLong = errors.New("SSE event longer than 8 MiB")

// Usage is a chunk's "usage" object: token counts as the server's
// tokenizer counted them. OK says the chunk carried a usage object with
// both counts (a null or absent "usage" leaves OK false).
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	OK               bool
}

// Chunk is one decoded event of a streaming (chat) completion. Its byte
// slices point into the StreamReader's buffers and are valid only until
// the next call to Next; they hold JSON string contents as sent (escapes
// not decoded), which is enough to tell empty from non-empty text.
type Chunk struct {
	// Done is the "[DONE]" sentinel that ends an OpenAI stream; no other
	// field is set with it.
	Done bool
	ID   []byte // "id"; nil when absent (SGLang's old usage chunk has its own)
	// Choices is the length of "choices" ([] in the usage chunk).
	Choices int
	// Text is choices[0].text (/v1/completions), Delta is
	// choices[0].delta.content (chat) and Reasoning is
	// choices[0].delta.reasoning_content (reasoning models). Nil when
	// absent or null.
	Text      []byte
	Delta     []byte
	Reasoning []byte
	// Role is choices[0].delta.role when it is a string (vLLM and SGLang
	// send a role-only first chunk, which is not content).
	Role []byte
	// Finish is choices[0].finish_reason when it is a string ("stop",
	// "length").
	Finish []byte
	Usage  Usage
}

// Content reports whether the chunk carries generated text: non-empty
// text, delta.content or delta.reasoning_content. TTFT is measured to the
// first such chunk and ITL between them, as the bench tools do.
func (c *Chunk) Content() bool { return len(c.Text) > 0 || len(c.Delta) > 0 || len(c.Reasoning) > 0 }

// ContentText returns the chunk's reasoning, text and delta content,
// decoded from JSON and joined (it allocates; the benchmark never calls
// it).
func (c *Chunk) ContentText() string {
	return decodeJSONString(c.Reasoning) + decodeJSONString(c.Text) + decodeJSONString(c.Delta)
}

func decodeJSONString(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var s string
	if json.Unmarshal(q, &s) != nil {
		return "" // cannot happen: the scanner checked the string
	}
	return s
}

// APIError is an error the server sent inside the stream ({"error": {...}}
// as vLLM and SGLang do after the HTTP 200 went out, or a top-level
// {"object": "error", ...}). Message is as sent, not sanitised.
type APIError struct {
	Message string
	Type    string
	Code    int // 0 when absent
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "(no message)"
	}
	if e.Code != 0 {
		return fmt.Sprintf("server error %d: %s", e.Code, msg)
	}
	return "server error: " + msg
}

// StreamReader reads a Server-Sent Events body incrementally and decodes
// each event as a streaming completion chunk. Lines end in LF or CRLF;
// "data:" lines (with or without one space after the colon) accumulate,
// several joined by "\n" as the SSE spec says; a blank line ends an event;
// ":" comments and other fields (event:, id:, retry:) are ignored. An event
// still open at the end of the body is decoded too (excerpts and servers
// that close without the final blank line). It does not allocate per
// event once its buffers have grown.
type StreamReader struct {
	br      *bufio.Reader
	data    []byte // the pending event's data lines
	hasData bool
	line    []byte // a line longer than br's buffer, assembled
	done    bool   // [DONE] seen
	eof     bool
}

// NewStreamReader reads r (which it does not close).
func NewStreamReader(r io.Reader) *StreamReader {
	return &StreamReader{br: bufio.NewReaderSize(r, 32<<10)}
}

// Reset makes s read r afresh, keeping its buffers.
func (s *StreamReader) Reset(r io.Reader) {
	s.br.Reset(r)
	s.data, s.hasData, s.line, s.done, s.eof = s.data[:0], false, s.line[:0], false, false
}

// SawDone reports whether the stream's "[DONE]" sentinel has been read.
func (s *StreamReader) SawDone() bool { return s.done }

// Next reads the next event into c. It returns io.EOF at the end of the
// body (after [DONE] or not: SawDone tells), an *APIError for an error the
// server sent in the stream, a *ChunkError for an event that is not a
// valid chunk, ErrEventTooLong, or the body's read error (a dropped
// connection is io.ErrUnexpectedEOF or a net error). Events whose data is
// empty or blank are skipped. After [DONE] Next returns io.EOF without
// reading further.
func (s *StreamReader) Next(c *Chunk) error {
	*c = Chunk{}
	for !s.done && !s.eof {
		line, err := s.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		s.eof = err != nil
		switch {
		case len(line) == 0:
			// a blank line ends the event (so does the end of the body)
		case line[0] == ':':
			continue // a comment (keep-alive)
		case bytes.HasPrefix(line, dataField):
			v := line[len(dataField):]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			if len(s.data)+len(v) > MaxEventBytes {
				return ErrEventTooLong
			}
			s.data = append(s.data, v...)
			s.hasData = true
			if !s.eof {
				continue
			}
		default:
			if !s.eof {
				continue // event:, id:, retry: and unknown fields
			}
		}
		if !s.hasData {
			continue
		}
		s.hasData = false
		data := bytes.TrimSpace(s.data)
		s.data = s.data[:0]
		switch {
		case len(data) == 0:
			continue
		case bytes.Equal(data, doneData):
			s.done = true
			c.Done = true
			return nil
		}
		return decodeChunk(data, c)
	}
	return io.EOF
}

var (
	dataField = []byte("data:")
	doneData  = []byte("[DONE]")
)

// readLine returns the next line without its LF or CRLF; the slice is
// valid until the next call. At the end of the body it returns the last
// (unterminated) line, possibly empty, with io.EOF.
func (s *StreamReader) readLine() ([]byte, error) {
	b, err := s.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.line = append(s.line[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.line) > MaxEventBytes {
				return nil, ErrEventTooLong
			}
			b, err = s.br.ReadSlice('\n')
			s.line = append(s.line, b...)
		}
		b = s.line
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	return b, err
}
