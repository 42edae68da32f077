package serverlog

import (
	"bytes"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// classSet is a set of failure classes, one bit each.
type classSet uint16

const (
	setOOM classSet = 1 << iota
	setNCCL
	setIllegal
	setWatchdog
	setEngineDead
	setTraceback
	setPortInUse
	setKilled
	setImport
)

// classOrder lists the classes from the most specific root cause to the
// most generic consequence. It orders several classes found on one line,
// and defines which classes are causes (the first six).
var classOrder = [...]struct {
	bit   classSet
	class event.ServerFailureClass
}{
	{setIllegal, event.FailCUDAIllegalMemory},
	{setOOM, event.FailOOM},
	{setNCCL, event.FailNCCL},
	{setWatchdog, event.FailWatchdogTimeout},
	{setPortInUse, event.FailPortInUse},
	{setImport, event.FailImport},
	{setEngineDead, event.FailEngineDead},
	{setKilled, event.FailKilled},
	{setTraceback, event.FailTraceback},
}

// Signatures, from research notes §1.5, §2.5 and §5. Each is matched as a
// substring anywhere in the line, after the prefix, so that process tags,
// rank tags and log shippers' prefixes do not matter.
var (
	sigOOM = [][]byte{
		[]byte("out of memory"),    // "CUDA out of memory.", "Cuda failure 'out of memory'", "CUDA error: out of memory"
		[]byte("OutOfMemoryError"), // torch.OutOfMemoryError, MQEngineDeadError(... OutOfMemoryError(...))
		[]byte("Not enough memory. Please try to increase --mem-fraction-static"),
	}
	sigNCCL = [][]byte{
		[]byte("NCCL error"), // RuntimeError: NCCL error: ..., DistBackendError: NCCL error in: ...
		[]byte("NCCL WARN "),
		[]byte("ncclUnhandledCudaError"),
		[]byte("ncclSystemError"),
		[]byte("ncclInternalError"),
		[]byte("ncclRemoteError"),
		[]byte("ncclInvalidUsage"),
		[]byte("ncclInvalidArgument"),
	}
	sigIllegal = [][]byte{
		[]byte("illegal memory access"),
		[]byte("cudaErrorIllegalAddress"),
	}
	sigWatchdog = [][]byte{
		[]byte("atchdog timeout"),                              // SGLang "Watchdog timeout (self.watchdog_timeout=300)", "Scheduler watchdog timeout"
		[]byte("Watchdog caught collective operation timeout"), // torch ProcessGroupNCCL
	}
	sigEngineDead = [][]byte{
		[]byte("EngineDeadError"), // V1 EngineDeadError, V0 MQEngineDeadError
		[]byte("Engine loop is not running"),
		[]byte("Engine core initialization failed"),
	}
	sigPortInUse = [][]byte{
		[]byte("ddress already in use"), // "[Errno 98] Address already in use", Go/Rust "address already in use"
		[]byte("[Errno 98]"),
		[]byte("error while attempting to bind on address"), // uvicorn
	}
	sigKilled = [][]byte{
		[]byte("Killed process"),           // kernel OOM killer: "Out of memory: Killed process 576419 (python)"
		[]byte("killed by the OOM killer"), // systemd
		[]byte("+  Killed "),               // shell job status "[1]+  Killed   python3 -m ..."
		[]byte("-  Killed "),
	}
	// sigImport are Python's exceptions for code that does not import;
	// matched only as the exception line of a traceback (isImportLine).
	sigImport = [][]byte{
		[]byte("SyntaxError: "),
		[]byte("IndentationError: "),
		[]byte("TabError: "),
		[]byte("ImportError: "),
		[]byte("ModuleNotFoundError: "),
	}
	kwTraceback = []byte("Traceback (most recent call last)")
	kwFile      = []byte(`File "`)
	kwFileLine  = []byte(`", line `)
	kwKilled    = []byte("Killed")
)

// Anchors: a substring that every signature of a group contains, chosen to
// start with a byte that is rare in logs (bytes.Index scans for the first
// byte), so that a line without failures costs a dozen vectorised scans.
var (
	anchorOutOfMem   = []byte("OutOfMemory")      // torch.OutOfMemoryError
	anchorOfMem      = []byte("f memory")         // CUDA out of memory, Cuda failure 'out of memory'
	anchorMemFrac    = []byte("fraction-static")  // Not enough memory. Please try to increase --mem-fraction-static
	anchorIllegal    = []byte("gal memory acc")   // illegal memory access
	anchorIllegalAdr = []byte("galAddress")       // cudaErrorIllegalAddress
	anchorNCCL       = []byte("CCL")              // NCCL error, NCCL WARN
	anchorNCCLLower  = []byte("ccl")              // ncclUnhandledCudaError, ...
	anchorWatchdog   = []byte("Watchdog")         // Watchdog timeout, Watchdog caught collective operation timeout
	anchorWatchdogLc = []byte("watchdog timeout") // Scheduler watchdog timeout
	anchorEngine     = []byte("Engine")           // EngineDeadError, Engine loop, Engine core
	anchorInUse      = []byte("y in use")         // Address already in use, address already in use
	anchorErrno      = []byte("Errno")            // [Errno 98]
	anchorBind       = []byte("bind on address")  // uvicorn
	anchorKilled     = []byte("Killed")           // Killed, Killed process
	anchorKilledLc   = []byte("killed by")        // killed by the OOM killer
	anchorPyError    = []byte("Error: ")          // SyntaxError: , ImportError: , ...
)

// matchLine returns the classes whose signature is on line.
func matchLine(line []byte) classSet {
	var set classSet
	if bytes.Contains(line, anchorOutOfMem) || bytes.Contains(line, anchorOfMem) || bytes.Contains(line, anchorMemFrac) {
		if containsAny(line, sigOOM) {
			set |= setOOM
		}
	}
	if (bytes.Contains(line, anchorIllegal) || bytes.Contains(line, anchorIllegalAdr)) && containsAny(line, sigIllegal) {
		set |= setIllegal
	}
	if (bytes.Contains(line, anchorNCCL) || bytes.Contains(line, anchorNCCLLower)) && containsAny(line, sigNCCL) {
		set |= setNCCL
	}
	if (bytes.Contains(line, anchorWatchdog) || bytes.Contains(line, anchorWatchdogLc)) && containsAny(line, sigWatchdog) {
		set |= setWatchdog
	}
	if bytes.Contains(line, anchorEngine) && containsAny(line, sigEngineDead) {
		set |= setEngineDead
	}
	if (bytes.Contains(line, anchorInUse) || bytes.Contains(line, anchorErrno) || bytes.Contains(line, anchorBind)) && containsAny(line, sigPortInUse) {
		set |= setPortInUse
	}
	if (bytes.Contains(line, anchorKilled) || bytes.Contains(line, anchorKilledLc)) && (containsAny(line, sigKilled) || killedAtEnd(line)) {
		set |= setKilled
		// The kernel's "Memory cgroup out of memory: Killed process" is
		// the host OOM killer, not a CUDA OOM.
		if bytes.Contains(line, sigKilled[0]) {
			set &^= setOOM
		}
	}
	if bytes.Contains(line, anchorPyError) && isImportLine(line) {
		set |= setImport
	}
	if bytes.Contains(line, kwTraceback) || isFrame(line) {
		set |= setTraceback
	}
	return set
}

// isImportLine reports a Python exception line naming one of sigImport:
// the exception at the start of the line (after indentation), or after a
// "] " or ") " that ends a rank tag or process prefix, never in the middle
// of a sentence ("… ignored: ImportError: …" warnings of optional imports).
// The classifier counts it only right after a traceback's frames.
func isImportLine(line []byte) bool {
	for _, sig := range sigImport {
		i := bytes.Index(line, sig)
		if i < 0 {
			continue
		}
		before := bytes.TrimRight(line[:i], " \t")
		if len(before) == 0 || (len(before) < i && (before[len(before)-1] == ']' || before[len(before)-1] == ')')) {
			return true
		}
	}
	return false
}

// importAfterFrames is how many lines after a traceback's last frame line
// an import-error exception line may come: the frame's source line, and
// SyntaxError's caret line (two with Python 3.11's carets).
const importAfterFrames = 4

// afterFrame narrows the classes of the line that follows a traceback frame
// line (and is not a frame itself): that line is the frame's source code
// (`raise RuntimeError(f"NCCL error: {error_str}")`), so only the exception
// line further down names the failure.
func afterFrame(set classSet) classSet {
	return set & setTraceback
}

func containsAny(line []byte, sigs [][]byte) bool {
	for _, s := range sigs {
		if bytes.Contains(line, s) {
			return true
		}
	}
	return false
}

// killedAtEnd reports the shell's "Killed" notice: the whole line, or glued
// to the end of a progress bar ("3/4 [00:08<00:02,  2.83s/it]Killed").
func killedAtEnd(line []byte) bool {
	line = bytes.TrimRight(line, " \r\t")
	if !bytes.HasSuffix(line, kwKilled) {
		return false
	}
	before := len(line) - len(kwKilled)
	if before == 0 {
		return true
	}
	c := line[before-1]
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_')
}

// isFrame reports a Python traceback frame line, `File "path", line N, in
// fn`, indented or not (some pasted logs lose the indentation).
func isFrame(line []byte) bool {
	i := bytes.Index(line, kwFile)
	if i < 0 {
		return false
	}
	rest := line[i+len(kwFile):]
	j := bytes.Index(rest, kwFileLine)
	if j < 0 {
		return false
	}
	rest = rest[j+len(kwFileLine):]
	k := 0
	for k < len(rest) && isDigit(rest[k]) {
		k++
	}
	return k > 0 && (k == len(rest) || rest[k] == ',')
}

// DedupLines is how many lines a failure class stays reported: a class
// seen again within this many lines of its previous sighting is the same
// incident (the next frames of one traceback, the same OOM printed by
// eight TP ranks) and is not reported again.
const DedupLines = 200

// rankContextLines is how far a rank tag carries: a failure line without
// a rank of its own (the unprefixed "RuntimeError: ..." that ends an
// SGLang traceback) takes the rank of the traceback or failure line seen
// at most this many lines before it.
const rankContextLines = 64

// Classifier finds failure signatures in a log, line by line, in order. It
// is stateful because a failure spans lines: the traceback that a rank
// tag starts ends with an unprefixed exception line, and the same incident
// repeats across frames and ranks.
//
// Classes: oom (CUDA out of memory, torch.OutOfMemoryError, NCCL's "Cuda
// failure 'out of memory'"), nccl (NCCL error / NCCL WARN / ncclXxxError),
// cuda-illegal-memory, watchdog-timeout (SGLang scheduler watchdog, torch
// NCCL watchdog), engine-dead (vLLM EngineDeadError, MQEngineDeadError,
// "Engine core initialization failed"), traceback (a Python traceback
// header or frame), port-in-use (EADDRINUSE, uvicorn bind error), killed
// (shell "Killed", kernel or systemd OOM killer), import-error (a
// traceback ending in SyntaxError, ImportError, ModuleNotFoundError, …: the
// code does not import).
//
// The zero value is ready to use. A Classifier is not safe for concurrent
// use.
type Classifier struct {
	n        int                   // lines fed
	last     [len(classOrder)]int  // line counter at the last sighting of each class, 0 = never
	seen     []event.ServerFailure // first report of each class, in the order found
	ctxRank  string                // rank of the last failure/traceback line that had one
	ctxAt    int                   // line counter of that line
	frameAt  int                   // line counter of the last traceback frame line
	reported classSet
}

// Feed classifies the next line of the log and appends the failures it
// reports to dst: a class is reported when its signature appears and it
// was not seen in the previous DedupLines lines. lineNo is stored in
// Failure.Line (pass 0 when streaming). Text is the line, sanitised.
// Feed does not allocate for lines without a signature.
func (c *Classifier) Feed(dst []event.ServerFailure, line []byte, lineNo int) []event.ServerFailure {
	var buf [cleanBufSize]byte
	return c.feed(dst, analyzeFailure(line, &buf), line, c.n+1, lineNo)
}

// failureInfo is what the stateless part of the classifier finds on one
// line; Scan computes it in parallel.
type failureInfo struct {
	set   classSet
	frame bool   // the line is a traceback frame
	rank  string // the line's own rank tag, "" when none
}

func analyzeFailure(line []byte, buf *[cleanBufSize]byte) failureInfo {
	cl := clean(line, buf)
	set := matchLine(cl)
	if set == 0 {
		return failureInfo{}
	}
	return failureInfo{set: set, frame: set&setTraceback != 0 && isFrame(cl), rank: lineRank(cl)}
}

// feed applies fi, found on line, the n-th line of the log (every line
// counts, with or without a signature).
func (c *Classifier) feed(dst []event.ServerFailure, fi failureInfo, line []byte, n, lineNo int) []event.ServerFailure {
	c.n = n
	set := fi.set
	if c.frameAt != 0 && c.frameAt == n-1 && !fi.frame {
		set = afterFrame(set)
	}
	if set&setImport != 0 && (c.frameAt == 0 || n-c.frameAt > importAfterFrames || fi.frame) {
		set &^= setImport // not a traceback's exception line
	}
	if fi.frame {
		c.frameAt = n
	}
	if set == 0 {
		return dst
	}
	rank := fi.rank
	if rank != "" {
		c.ctxRank, c.ctxAt = rank, n
	} else if c.ctxRank != "" && n-c.ctxAt <= rankContextLines {
		rank = c.ctxRank
	}
	var text string
	for i, co := range classOrder {
		if set&co.bit == 0 {
			continue
		}
		prev := c.last[i]
		c.last[i] = n
		if prev != 0 && n-prev <= DedupLines {
			continue
		}
		if text == "" {
			text = sanitize.Line(line)
		}
		f := event.ServerFailure{Class: co.class, Text: text, Rank: rank, Line: lineNo}
		if c.reported&co.bit == 0 {
			c.reported |= co.bit
			c.seen = append(c.seen, f)
		}
		dst = append(dst, f)
	}
	return dst
}

// lineRank returns the SGLang rank tag ("TP0", "DP1 TP0") or the vLLM
// process tag without its pid ("EngineCore", "VllmWorker rank=7") of a
// line, "" when it has neither.
func lineRank(line []byte) string {
	if r, _ := findRank(line); r != nil {
		return internRank(r)
	}
	if t := processTag(line); t != nil {
		return sanitize.Line(t)
	}
	return ""
}

// Primary returns the failure that best explains the log so far: the first
// failure found of the lowest Tier (the root causes, then engine-dead and
// killed, then traceback). Later failures are usually fallout of the first
// (vllm#18446: the NCCL error comes first, the "Cuda failure 'out of
// memory'" it wraps after). ok is false when nothing was found.
func (c *Classifier) Primary() (event.ServerFailure, bool) {
	best := -1
	for i, f := range c.seen {
		if best < 0 || f.Class.Tier() < c.seen[best].Class.Tier() {
			best = i
		}
	}
	if best < 0 {
		return event.ServerFailure{}, false
	}
	return c.seen[best], true
}

// Seen returns the first report of each class found so far, in the order
// the classes were found.
func (c *Classifier) Seen() []event.ServerFailure {
	return append([]event.ServerFailure(nil), c.seen...)
}

// Reset forgets everything, for a new server launch or a log that was
// truncated or replaced.
func (c *Classifier) Reset() { *c = Classifier{} }

func bitOf(class event.ServerFailureClass) classSet {
	for _, co := range classOrder {
		if co.class == class {
			return co.bit
		}
	}
	return 0
}
