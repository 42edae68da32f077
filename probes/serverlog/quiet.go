package serverlog

import "encoding/binary"

// The quiet-line filter. Most lines of a log are neither a batch line nor
// anything else the scanner reports; the general analysis spends some
// twenty substring searches to find that out. quiet finds it in one pass:
// every keyword that any parser or failure signature needs contains one of
// the byte pairs below, chosen to be rare in ordinary log text, so a line
// without any of them (and without escape sequences, which the failure
// matcher strips first) can have no finding. A line with one goes through
// the general analysis, which decides; the pairs only cost time when they
// are common. TestQuietCoversKeywords checks that every keyword has a pair,
// FuzzQuietAgreesWithAnalysis that the filter never hides a finding.
var quietPairs = [...]string{
	"Av", // Avg generation throughput (vLLM metrics)
	"Pr", // Prefill batch, Prefill. latency (bench_one_batch)
	"Sp", // SpecDecoding metrics, Speculative metrics
	"Be", // Serving Benchmark Result, Benchmark ...
	"Wa", // Warmup ...; Watchdog caught collective operation timeout
	"l!", // The server is fired up and ready to roll!
	"vL", // Starting vLLM API server, Starting vLLM server on
	"Uv", // Uvicorn running on
	"ry", // out of memory
	"fM", // OutOfMemoryError
	"Pl", // Not enough memory. Please try to increase --mem-fraction-static
	"CC", // NCCL error, NCCL WARN
	"lU", // ncclUnhandledCudaError
	"lS", // ncclSystemError
	"lI", // ncclInternalError, ncclInvalidUsage, ncclInvalidArgument
	"lR", // ncclRemoteError
	"ga", // illegal memory access
	"rI", // cudaErrorIllegalAddress
	"hd", // Watchdog timeout, watchdog timeout
	"eD", // EngineDeadError, MQEngineDeadError
	"nn", // Engine loop is not running
	"za", // Engine core initialization failed
	"lr", // Address already in use
	"[E", // [Errno 98]
	"bi", // error while attempting to bind on address
	"Ki", // Killed, Killed process, +  Killed, -  Killed
	"OO", // killed by the OOM killer
	"(m", // Traceback (most recent call last)
	`",`, // File "path", line N (a traceback frame; isFrame needs both parts)
	"#0", // #033[ (CloudWatch's rendering of ESC)
	"Er", // SyntaxError: , ImportError: , ModuleNotFoundError: , … (import-error)
}

// quietTable holds one bit per byte pair (first byte in the low 8 bits of
// the index): 1 for the pairs above, for ESC followed by anything, and for
// '[' followed by a digit (a colour code that lost its ESC, checked in
// place because every SGLang prefix "[2025-" has one).
var quietTable = func() (t [1 << 16 / 64]uint64) {
	set := func(a, b byte) {
		k := uint32(a) | uint32(b)<<8
		t[k>>6] |= 1 << (k & 63)
	}
	for _, p := range quietPairs {
		set(p[0], p[1])
	}
	for b := range 256 {
		set(0x1b, byte(b))
	}
	for b := byte('0'); b <= '9'; b++ {
		set('[', b)
	}
	return t
}()

// quiet reports that the general analysis (analyzeRest) finds nothing on
// line: no keyword of any parser, no failure signature, no escape
// sequence. Lines shorter than two bytes are never quiet. ownPrefix says
// that line starts with SGLang's "[2025-10-22 10:27:57": no pair of the
// table starts with a digit, '-', ' ' or ':' (TestQuietPairs), and the
// '[' before four digits starts no colour code, so the scan starts after
// the stamp.
func quiet(line []byte, ownPrefix bool) bool {
	if len(line) < 2 || line[len(line)-1] == 0x1b {
		return false
	}
	i := 0 // the first byte of the next pair
	if ownPrefix {
		i = 20
	}
	// Seven pairs per 8-byte load; the next load starts at the last byte
	// of this one.
	for ; i+8 <= len(line); i += 7 {
		w := binary.LittleEndian.Uint64(line[i:])
		if quietPair(w) || quietPair(w>>8) || quietPair(w>>16) || quietPair(w>>24) ||
			quietPair(w>>32) || quietPair(w>>40) || quietPair(w>>48) {
			if !quietAgain(line, i, min(i+7, len(line)-1)) {
				return false
			}
		}
	}
	return quietAgain(line, i, len(line)-1)
}

// quietPair reports whether the low two bytes of w are a pair of the
// table (the first byte in the low 8 bits).
func quietPair(w uint64) bool {
	k := uint32(w) & 0xffff
	return quietTable[k>>6&1023]&(1<<(k&63)) != 0
}

// quietAgain looks at the pairs that start at line[from:to] one by one:
// false for a pair of the table, unless it is a '[' and a digit that do
// not start a colour code ("[2025-10-22 ...").
func quietAgain(line []byte, from, to int) bool {
	for i := from; i < to; i++ {
		if !quietPair(uint64(line[i]) | uint64(line[i+1])<<8) {
			continue
		}
		if line[i] == '[' && isDigit(line[i+1]) && !maybeLostSGR(line[i+1:]) {
			continue
		}
		return false
	}
	return true
}

// maybeLostSGR reports whether b, which follows a '[', could be the rest
// of a colour code that lost its ESC ("[1;32m"): digits and ';' then 'm'
// within 16 bytes. This is looser than sanitize's rule, so it never says
// no to a code that sanitize strips.
func maybeLostSGR(b []byte) bool {
	for j := 0; j < len(b) && j < 16; j++ {
		if c := b[j]; !isDigit(c) && c != ';' {
			return c == 'm'
		}
	}
	return false
}
