package serverlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/probes/sanitize"
)

// readyDedupLines: a uvicorn "Uvicorn running on" line within this many
// lines of a readiness line already reported is not reported again.
const readyDedupLines = 100

// Scanner runs every parser of this package over a log, line by line and
// in order, and reports what it finds: Throughput (SGLang decode, vLLM
// metrics), Prefill, SpecDecode, Ready, Failure and Bench payloads. It
// holds the state that spans lines (tracebacks, benchmark tables, which
// server wrote the log).
//
// Readiness: SGLang's "The server is fired up and ready to roll!" and
// vLLM's "Starting vLLM (API) server ... on URL" are readiness lines.
// uvicorn's "Uvicorn running on URL" is readiness only when the log is not
// SGLang's (for SGLang it only means the port is bound): it counts when
// Server is not ServerSGLang, the line lacks SGLang's "[YYYY-MM-DD
// HH:MM:SS]" prefix, no SGLang line was seen before it, and no readiness
// line was reported in the previous 100 lines. This matches old vLLM
// (vllm#6194), whose only readiness signal it is.
//
// The zero value is ready to use. Not safe for concurrent use.
type Scanner struct {
	// Server, when ServerSGLang or ServerVLLM, says which server wrote the
	// log (the session that launched it knows); otherwise it is inferred
	// from the lines.
	Server string

	cls       Classifier
	bench     BenchParser
	inferred  string
	n         int // lines fed
	readyAt   int // line counter of the last readiness report, 0 = none
	failures  []Failure
	skipFails bool
}

// Feed scans one line (without its newline; a trailing \r is ignored) and
// calls emit for each finding, in order. lineNo is stored in the
// findings' Line field (0 when streaming).
func (s *Scanner) Feed(line []byte, lineNo int, emit func(event.Payload)) {
	s.n++
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if b, ok := s.bench.Feed(line, lineNo); ok {
		emit(b)
	}
	if t, ok := ParseSGLangDecode(line); ok {
		t.Line = lineNo
		s.inferred = ServerSGLang
		emit(t)
		return
	}
	if t, ok := ParseVLLMThroughput(line); ok {
		t.Line = lineNo
		s.inferred = ServerVLLM
		emit(t)
		return
	}
	if p, ok := ParseSGLangPrefill(line); ok {
		p.Line = lineNo
		s.inferred = ServerSGLang
		emit(p)
		return
	}
	if sd, ok := ParseVLLMSpecDecode(line); ok {
		sd.Line = lineNo
		s.inferred = ServerVLLM
		emit(sd)
		return
	}
	if len(line) > 20 && line[0] == '[' && matchShape(line[1:20], "dddd-dd-dd dd:dd:dd") {
		s.inferred = ServerSGLang
	}
	if r, ok := ParseReady(line); ok {
		r.Line = lineNo
		s.inferred = r.Server
		s.readyAt = s.n
		emit(r)
		return
	}
	if url, sglangPrefix, ok := ParseHTTPBound(line); ok {
		if s.server() != ServerSGLang && !sglangPrefix && (s.readyAt == 0 || s.n-s.readyAt > readyDedupLines) {
			s.readyAt = s.n
			emit(Ready{Server: s.server(), URL: url, Text: sanitize.Line(line), Line: lineNo})
		}
		return
	}
	start := len(s.failures)
	s.failures = s.cls.Feed(s.failures, line, lineNo)
	for _, f := range s.failures[start:] {
		emit(f)
	}
	s.failures = s.failures[:0]
}

// Flush reports what the end of input completes (a benchmark table that
// was cut short).
func (s *Scanner) Flush(emit func(event.Payload)) {
	if b, ok := s.bench.Flush(); ok {
		emit(b)
	}
}

// Primary returns the failure that best explains the log (see
// Classifier.Primary).
func (s *Scanner) Primary() (Failure, bool) { return s.cls.Primary() }

// Failures returns the first report of each failure class, in the order
// found.
func (s *Scanner) Failures() []Failure { return s.cls.Seen() }

// Reset forgets all state, for a log that was truncated or replaced.
func (s *Scanner) Reset() {
	*s = Scanner{Server: s.Server}
}

func (s *Scanner) server() string {
	if s.Server != "" {
		return s.Server
	}
	return s.inferred
}

// MaxLineBytes is the longest line ScanLines passes on whole; the rest of
// a longer line is skipped (and counted in nothing but its line number).
// Real log records stay well under it; a multi-megabyte "line" is a binary
// file or a runaway dump.
const MaxLineBytes = 1 << 20

// kwSourceHeader starts the provenance line of the shared fixtures.
var kwSourceHeader = []byte("# source:")

// ScanLines calls fn for each line of r with its 1-based physical line
// number: line 1 is the first line of the input. A first line that starts
// with "# source:" (the fixtures' provenance header) is skipped, and the
// next line is still line 2, so numbers match an editor's and grep -n's.
// The newline is not part of the line; a last line without one is passed
// too. A line longer than MaxLineBytes is cut to its first MaxLineBytes
// bytes. The slice passed to fn is only valid during the call. It returns
// the first read error other than io.EOF.
func ScanLines(r io.Reader, fn func(line []byte, lineNo int)) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var long []byte // a line longer than the reader's buffer
	lineNo := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if room := MaxLineBytes - len(long); room > 0 {
				long = append(long, chunk[:min(len(chunk), room)]...)
			}
			continue
		}
		if len(chunk) > 0 || long != nil {
			line := chunk
			if long != nil {
				if room := MaxLineBytes - len(long); room > 0 {
					long = append(long, chunk[:min(len(chunk), room)]...)
				}
				line, long = long, nil
			}
			line = bytes.TrimSuffix(line, []byte{'\n'})
			lineNo++
			if !(lineNo == 1 && bytes.HasPrefix(line, kwSourceHeader)) {
				fn(line, lineNo)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("serverlog: read log: %w", err)
		}
	}
}

// Scan runs a Scanner over all of r (see ScanLines for line numbering) and
// calls emit for each finding, in input order, then Flush. It returns the
// Scanner so that the caller can ask for the primary failure.
func Scan(r io.Reader, emit func(event.Payload)) (*Scanner, error) {
	s := &Scanner{}
	err := ScanLines(r, func(line []byte, lineNo int) { s.Feed(line, lineNo, emit) })
	s.Flush(emit)
	return s, err
}
