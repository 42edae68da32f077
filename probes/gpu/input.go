package gpu

import (
	"bytes"
	"errors"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
)

// What WriteJSONL accepts besides plain CSV, and what it refuses before
// reading a line: saved output is often the wrong file (a binary, a
// compressed archive) or a whole nvidia_gpu_exporter capture.

// ErrNotQueryGPU is wrapped by the error WriteJSONL returns for input that
// is not nvidia-smi --query-gpu output at all: binary data, or text in which
// no line is a header, a row or a whole-command failure. Test for it with
// errors.Is; the message after it says what was found instead.
var ErrNotQueryGPU = errors.New("not nvidia-smi --query-gpu CSV")

// notQueryGPUError is ErrNotQueryGPU with its reason; for text input it also
// carries the rows that were dropped, so that errors.As finds the
// *GarbledError.
type notQueryGPUError struct {
	reason  string
	garbled *GarbledError // nil for binary input
}

func (e *notQueryGPUError) Error() string { return ErrNotQueryGPU.Error() + ": " + e.reason }

func (e *notQueryGPUError) Unwrap() []error {
	if e.garbled == nil {
		return []error{ErrNotQueryGPU}
	}
	return []error{ErrNotQueryGPU, e.garbled}
}

// sniffLen is how much of the input is looked at before the first line is
// read: enough for a capture's banner and to tell text from binary.
const sniffLen = sanitize.SniffLen

// captureBanner is the title line that opens an nvidia_gpu_exporter capture
// (utkuozdemir/nvidia_gpu_exporter, internal/captures/*.txt).
var captureBanner = []byte("# nvidia_gpu_exporter GPU capture")

// isCapture reports whether the first bytes of an input open a capture: its
// first line other than blanks, '#' rules and a "# source:" line is the
// banner.
func isCapture(p []byte) bool {
	for len(p) > 0 {
		var line []byte
		line, p, _ = bytes.Cut(p, []byte{'\n'})
		line = bytes.TrimSpace(line)
		switch {
		case len(line) == 0, isRule(line), bytes.HasPrefix(line, []byte("# source:")):
			continue
		}
		return bytes.HasPrefix(line, captureBanner)
	}
	return false
}

// isRule reports a capture's section rule: a line of at least 20 '#'.
func isRule(line []byte) bool {
	line = bytes.TrimRight(line, " \t\r")
	return len(line) >= 20 && len(bytes.Trim(line, "#")) == 0
}

// captureSections follows the layout of an nvidia_gpu_exporter capture and
// picks the lines of the sections WriteJSONL reads. A section is
//
//	################…
//	# <state> :: <name> (<note>)
//	# $ <command>        (optional)
//	################…
//	<body, up to the next rule>
//
// and the banner at the top has the same shape. Only the bodies of
// "load :: query-gpu" sections are wanted: the CSV the exporter parses under
// load, which is what the fixtures' MANIFEST describes.
type captureSections struct {
	phase capPhase
	want  bool // the current section is a load query-gpu one
	found bool // such a section was seen
}

type capPhase uint8

const (
	capBefore capPhase = iota // before the first rule
	capTitle                  // after an opening rule: the title comes next
	capHead                   // in the title block, up to the closing rule
	capBody
)

// body reports whether line is part of a wanted section's body.
func (c *captureSections) body(line []byte) bool {
	if isRule(line) {
		if c.phase == capHead {
			c.phase = capBody
		} else {
			c.phase, c.want = capTitle, false
		}
		return false
	}
	switch c.phase {
	case capTitle:
		c.phase, c.want = capHead, isLoadQueryGPU(line)
		c.found = c.found || c.want
		return false
	case capHead:
		if len(line) > 0 && line[0] == '#' {
			return false
		}
		c.phase = capBody // no closing rule: the body starts here
		return c.want
	case capBody:
		return c.want
	}
	return false
}

// isLoadQueryGPU reports the title "# load :: query-gpu", alone or followed
// by a note ("# load :: query-gpu (csv, what the exporter parses)"); not
// "query-gpu field list" nor another state's section.
func isLoadQueryGPU(title []byte) bool {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(title), []byte("# load :: query-gpu"))
	return ok && (len(rest) == 0 || rest[0] == ' ')
}

// isCommandEcho reports a pasted shell command line that runs nvidia-smi:
// "$ nvidia-smi --query-gpu=… --format=csv", "❯ sudo nvidia-smi -q",
// "user@host:~$ watch -n1 'nvidia-smi …'". The program name must be a word
// of its own (not "gpu-nvidia-smi-01") and nothing before it may hold a
// comma, so that a CSV row whose cells mention the name (a host or process
// "nvidia-smi") is read as a row. nvidia-smi's own output never contains
// the lower-case program name as a word.
func isCommandEcho(line []byte) bool {
	const prog = "nvidia-smi"
	for off := 0; ; {
		i := bytes.Index(line[off:], []byte(prog))
		if i < 0 {
			return false
		}
		i += off
		if bytes.IndexByte(line[:i], ',') >= 0 {
			return false
		}
		end := i + len(prog)
		if bytes.HasPrefix(line[end:], []byte(".exe")) {
			end += len(".exe")
		}
		if (i == 0 || !isWordByte(line[i-1])) && (end == len(line) || !isWordByte(line[end]) && line[end] != ',') {
			return true
		}
		off = end
	}
}

// isWordByte: bytes that continue a host, file or program name.
func isWordByte(c byte) bool { return isNameByte(c) || c == '-' }
