package serverlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// readyDedupLines: a uvicorn "Uvicorn running on" line within this many
// lines of a readiness line already reported is not reported again.
const readyDedupLines = 100

// Scanner runs every parser of this package over a log, line by line and
// in order, and reports what it finds: Throughput (SGLang decode, vLLM
// metrics), Prefill, SpecDecode, ServerReady, ServerFailure and LogBench payloads. It
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
	an        analyzer
	sawSGLang bool // an SGLang line (batch line, "[YYYY-MM-DD HH:MM:SS" prefix, ready line) was seen
	sawVLLM   bool // a vLLM line (metrics, spec decode, ready line) was seen
	n         int  // lines fed
	readyAt   int  // line counter of the last readiness report, 0 = none
	failures  []event.ServerFailure
}

// Feed scans one line (without its newline; a trailing \r is ignored) and
// calls emit for each finding, in order. lineNo is stored in the
// findings' Line field (0 when streaming).
func (s *Scanner) Feed(line []byte, lineNo int, emit func(event.Payload)) {
	line = trimCR(line)
	info := s.an.analyze(line, lineNo)
	s.apply(&info, line, s.n+1, lineNo, emit)
}

func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// lineInfo is what the stateless part of the scanner finds on one line:
// the parsers' results, ready to emit, and the failure signatures. Scan
// computes it on several goroutines and keeps one per line with findings;
// apply then runs the stateful part in order. It is kept small (40 bytes)
// because a busy log has a finding on most lines.
type lineInfo struct {
	found  event.Payload // Throughput, Prefill, SpecDecode or Ready, Line and Stamp set
	text   string        // infoHTTP: the URL; a failure: the line's rank tag ("" when none)
	fail   classSet      // failure classes on the line
	flags  infoFlags
	server serverID // the server that found shows
}

// infoFlags are the yes/no findings of lineInfo.
type infoFlags uint8

const (
	infoReady        infoFlags = 1 << iota // found is a Ready
	infoHTTP                               // a "Uvicorn running on" line
	infoHTTPSGLang                         // ... with SGLang's own prefix
	infoBenchStart                         // the line can start benchmark output
	infoSGLangPrefix                       // the line starts with SGLang's "[YYYY-MM-DD HH:MM:SS"
	infoFrame                              // a traceback frame line (with fail set)
)

// serverID is ServerSGLang or ServerVLLM in one byte.
type serverID uint8

const (
	serverNone serverID = iota
	serverSGLang
	serverVLLM
)

func serverIDOf(server string) serverID {
	switch server {
	case ServerSGLang:
		return serverSGLang
	case ServerVLLM:
		return serverVLLM
	}
	return serverNone
}

func (i *lineInfo) empty() bool {
	return i.found == nil && i.flags == 0 && i.fail == 0
}

// analyzer holds the scratch state of the stateless part: a buffer for
// stripping colour codes and the last timestamp string, reused while it
// repeats (log timestamps repeat for every line of a second).
type analyzer struct {
	buf     [cleanBufSize]byte
	stamp   string
	lineEnd recordEnd // the fast records' line numbers
}

func (a *analyzer) intern(b []byte) string {
	if b == nil {
		return ""
	}
	if string(b) != a.stamp {
		a.stamp = string(b)
	}
	return a.stamp
}

// analyze runs every parser on line, most frequent first, and stops at the
// first that recognises it. SGLang batch lines in the 2025 layout are read
// whole first (ownDecodeLine, ownPrefillLine), and lines that the quiet
// filter clears skip all but the decode parser; analyzeFull is the same
// without these shortcuts.
func (a *analyzer) analyze(line []byte, lineNo int) lineInfo {
	own := ownPrefixEnd(line)
	var t event.Throughput
	if own > 0 {
		// Lines that are nothing but SGLang's prefix and a batch line in
		// the 2025 layout: no other parser can claim them.
		if stamp, ok := ownDecodeLine(&t, line, own); ok {
			t.Line, t.Stamp = lineNo, a.intern(stamp)
			return lineInfo{found: t, server: serverSGLang}
		}
		var p event.Prefill
		if stamp, ok := ownPrefillLine(&p, line, own); ok {
			p.Line, p.Stamp = lineNo, a.intern(stamp)
			return lineInfo{found: p, server: serverSGLang}
		}
	}
	if stamp, ok := parseSGLangDecode(&t, line, &a.buf, own); ok {
		t.Line, t.Stamp = lineNo, a.intern(stamp)
		return lineInfo{found: t, server: serverSGLang}
	}
	stamped := own > 0 || hasOwnPrefix(line)
	if quiet(line, stamped) {
		if stamped {
			return lineInfo{flags: infoSGLangPrefix}
		}
		return lineInfo{}
	}
	return a.analyzeRest(line, lineNo, own)
}

// analyzeFull is analyze without the quiet filter and without the own
// prefix shortcuts: the reference that they must agree with.
func (a *analyzer) analyzeFull(line []byte, lineNo int) lineInfo {
	var t event.Throughput
	if stamp, ok := parseSGLangDecode(&t, line, &a.buf, 0); ok {
		t.Line, t.Stamp = lineNo, a.intern(stamp)
		return lineInfo{found: t, server: serverSGLang}
	}
	return a.analyzeRest(line, lineNo, 0)
}

// hasOwnPrefix reports whether line starts with SGLang's
// "[YYYY-MM-DD HH:MM:SS".
func hasOwnPrefix(line []byte) bool {
	return len(line) > 20 && line[0] == '[' && isStamp(line[1:])
}

// analyzeRest is analyze after the decode parser; own is
// ownPrefixEnd(line), or 0 to do without.
func (a *analyzer) analyzeRest(line []byte, lineNo, own int) lineInfo {
	if t, stamp, ok := parseVLLMThroughput(line, &a.buf); ok {
		t.Line, t.Stamp = lineNo, a.intern(stamp)
		return lineInfo{found: t, server: serverVLLM}
	}
	var p event.Prefill
	if stamp, ok := parseSGLangPrefill(&p, line, &a.buf, own); ok {
		p.Line, p.Stamp = lineNo, a.intern(stamp)
		return lineInfo{found: p, server: serverSGLang}
	}
	if sd, stamp, ok := parseVLLMSpecDecode(line, &a.buf); ok {
		sd.Line, sd.Stamp = lineNo, a.intern(stamp)
		return lineInfo{found: sd, server: serverVLLM}
	}
	if isBenchStart(line) {
		return lineInfo{flags: infoBenchStart}
	}
	var info lineInfo
	if own > 0 || hasOwnPrefix(line) {
		info.flags = infoSGLangPrefix
	}
	if r, ok := ParseReady(line); ok {
		r.Line = lineNo
		info.found, info.server = r, serverIDOf(r.Server)
		info.flags |= infoReady
		return info
	}
	if url, sglangPrefix, ok := ParseHTTPBound(line); ok {
		info.flags |= infoHTTP
		if sglangPrefix {
			info.flags |= infoHTTPSGLang
		}
		info.text = url
		return info
	}
	if fi := analyzeFailure(line, &a.buf); fi.set != 0 {
		info.fail, info.text = fi.set, fi.rank
		if fi.frame {
			info.flags |= infoFrame
		}
	}
	return info
}

// apply runs the stateful part for line, the n-th line fed (every line
// counts), whose stateless findings are info.
func (s *Scanner) apply(info *lineInfo, line []byte, n, lineNo int, emit func(event.Payload)) {
	s.n = n
	// Inside a benchmark table every line is a row (or ends the table).
	if s.bench.active() {
		b, ok, consumed := s.bench.feed(line, lineNo)
		if ok {
			emit(b)
		}
		if consumed {
			return
		}
	}
	if info.found != nil && info.flags&infoReady == 0 {
		s.saw(info.server)
		emit(info.found)
		return
	}
	if info.flags&infoBenchStart != 0 {
		if _, _, started := s.bench.feed(line, lineNo); started {
			return
		}
	}
	if info.flags&infoSGLangPrefix != 0 {
		s.sawSGLang = true
	}
	if info.found != nil { // Ready
		s.saw(info.server)
		s.readyAt = n
		emit(info.found)
		return
	}
	if info.flags&infoHTTP != 0 {
		sglang := s.Server == ServerSGLang || (s.Server == "" && s.sawSGLang)
		if !sglang && info.flags&infoHTTPSGLang == 0 && (s.readyAt == 0 || n-s.readyAt > readyDedupLines) {
			s.readyAt = n
			server := s.Server
			if server == "" && s.sawVLLM {
				server = ServerVLLM
			}
			emit(event.ServerReady{Server: server, URL: info.text, Text: sanitize.Line(line), Line: lineNo})
		}
		return
	}
	if info.fail != 0 {
		fi := failureInfo{set: info.fail, frame: info.flags&infoFrame != 0, rank: info.text}
		s.failures = s.cls.feed(s.failures[:0], fi, line, n, lineNo)
		for _, f := range s.failures {
			emit(f)
		}
	}
}

func (s *Scanner) saw(server serverID) {
	switch server {
	case serverSGLang:
		s.sawSGLang = true
	case serverVLLM:
		s.sawVLLM = true
	}
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
func (s *Scanner) Primary() (event.ServerFailure, bool) { return s.cls.Primary() }

// Failures returns the first report of each failure class, in the order
// found.
func (s *Scanner) Failures() []event.ServerFailure { return s.cls.Seen() }

// Reset forgets all state, for a log that was truncated or replaced.
func (s *Scanner) Reset() {
	*s = Scanner{Server: s.Server}
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
