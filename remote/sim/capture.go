package sim

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// h200Capture is a real nvidia-smi capture of one H200 (driver 590.48.01,
// from utkuozdemir/nvidia_gpu_exporter, MIT; see captures/NOTICE.md). The
// synthetic nvidia-smi takes its field names, aliases, units and every value
// it does not model from this file.
//
//go:embed captures/linux-x86_64__nvidia-h200__590.48.01.txt
var h200Capture string

// Capture is the part of an nvidia_gpu_exporter capture file the fake
// nvidia-smi answers from: the --help-query-gpu text, the field catalogue it
// defines, and the load section's --query-gpu CSV.
type Capture struct {
	// HelpQueryGPU is the verbatim body of the "capabilities :: help-query-gpu"
	// section (what `nvidia-smi --help-query-gpu` printed).
	HelpQueryGPU string
	// HelpQueryComputeApps is the body of "help-query-compute-apps" ("" when absent).
	HelpQueryComputeApps string
	// Version is the body of "capabilities :: version" ("" when absent).
	Version string
	// Fields maps every name and alias in HelpQueryGPU to its canonical name
	// (the first spelling, which is what nvidia-smi prints in the CSV header).
	Fields map[string]string
	// Units maps a canonical field name to the unit shown in the load CSV
	// header ("MiB", "W", "%", "MHz", "us"); absent means no unit.
	Units map[string]string
	// Rows are the load section's CSV rows, one per GPU, keyed by canonical
	// field name, values without their unit suffix (units are added back on
	// output unless nounits is given).
	Rows []map[string]string
}

// section returns the body of the first section whose title starts with
// prefix, e.g. "load :: query-gpu". Sections are framed by a line of '#'
// characters, a "# title" line, an optional "# $ command" line and another
// '#' line; the body runs to the next frame.
func captureSection(text, prefix string) (string, bool) {
	lines := strings.Split(text, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !isFrame(lines[i]) || !strings.HasPrefix(lines[i+1], "# "+prefix) {
			continue
		}
		j := i + 2
		for j < len(lines) && !isFrame(lines[j]) {
			j++ // skip "# $ command" and any other comment lines up to the closing frame
		}
		start := j + 1
		end := start
		for end < len(lines) && !isFrame(lines[end]) {
			end++
		}
		if start > len(lines) {
			return "", false
		}
		body := strings.Join(lines[start:end], "\n")
		return strings.TrimRight(body, "\n") + "\n", true
	}
	return "", false
}

func isFrame(line string) bool {
	return len(line) >= 20 && strings.Trim(line, "#") == ""
}

// LoadCapture reads and parses a capture file (see ParseCapture).
func LoadCapture(path string) (*Capture, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read gpu capture: %w", err)
	}
	c, err := ParseCapture(string(b))
	if err != nil {
		return nil, fmt.Errorf("gpu capture %s: %w", path, err)
	}
	return c, nil
}

var (
	defaultOnce sync.Once
	defaultCap  *Capture
	defaultErr  error
)

// DefaultCapture returns the embedded H200 capture, parsed once. The
// returned value is shared: do not modify it.
func DefaultCapture() (*Capture, error) { return defaultCapture() }

func defaultCapture() (*Capture, error) {
	defaultOnce.Do(func() { defaultCap, defaultErr = ParseCapture(h200Capture) })
	return defaultCap, defaultErr
}

// ParseCapture parses an nvidia_gpu_exporter capture (the format of
// internal/captures/*.txt in utkuozdemir/nvidia_gpu_exporter). It needs the
// "capabilities :: help-query-gpu" section and the "load :: query-gpu" CSV
// (header with units plus at least one row); it returns an error naming what
// is missing or malformed.
func ParseCapture(text string) (*Capture, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	help, ok := captureSection(text, "capabilities :: help-query-gpu")
	if !ok {
		return nil, errors.New(`no "capabilities :: help-query-gpu" section`)
	}
	c := &Capture{HelpQueryGPU: help, Fields: parseHelpFields(help), Units: map[string]string{}}
	if len(c.Fields) == 0 {
		return nil, errors.New("help-query-gpu section lists no fields")
	}
	c.HelpQueryComputeApps, _ = captureSection(text, "capabilities :: help-query-compute-apps")
	c.Version, _ = captureSection(text, "capabilities :: version")
	csv, ok := captureSection(text, "load :: query-gpu")
	if !ok {
		return nil, errors.New(`no "load :: query-gpu" section`)
	}
	var lines []string
	for _, l := range strings.Split(csv, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 {
		return nil, errors.New("load query-gpu section has no header and row")
	}
	header := strings.Split(lines[0], ", ")
	names := make([]string, len(header))
	for i, h := range header {
		name, unit := h, ""
		if k := strings.Index(h, " ["); k >= 0 && strings.HasSuffix(h, "]") {
			name, unit = h[:k], h[k+2:len(h)-1]
		}
		names[i] = name
		if unit != "" {
			c.Units[name] = unit
		}
		if _, ok := c.Fields[name]; !ok {
			c.Fields[name] = name // a column the help text does not list is still queryable
		}
	}
	for n, l := range lines[1:] {
		cells := strings.Split(l, ", ")
		if len(cells) != len(names) {
			return nil, fmt.Errorf("load query-gpu row %d has %d cells, header has %d", n+1, len(cells), len(names))
		}
		row := make(map[string]string, len(names))
		for i, v := range cells {
			if u := c.Units[names[i]]; u != "" {
				v = strings.TrimSuffix(v, " "+u)
			}
			row[names[i]] = v
		}
		c.Rows = append(c.Rows, row)
	}
	return c, nil
}

// parseHelpFields reads `"name" or "alias"` lines of --help-query-gpu output
// into alias → canonical name. Lines that merely start with a quote
// (`"0: Default" means ...`) are not field lines and are skipped.
func parseHelpFields(help string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(help, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, `"`) || !strings.HasSuffix(l, `"`) {
			continue
		}
		parts := strings.Split(l, `" or "`)
		var names []string
		valid := true
		for i, p := range parts {
			if i == 0 {
				p = strings.TrimPrefix(p, `"`)
			}
			if i == len(parts)-1 {
				p = strings.TrimSuffix(p, `"`)
			}
			if p == "" || strings.ContainsAny(p, `" :`) {
				valid = false
				break
			}
			names = append(names, p)
		}
		if !valid {
			continue
		}
		for _, n := range names {
			if _, dup := out[n]; !dup {
				out[n] = names[0]
			}
		}
	}
	return out
}

// Canonical returns the canonical spelling of a --query-gpu field name or
// alias ("clocks.sm" → "clocks.current.sm"), and false for an unknown field.
func (c *Capture) Canonical(field string) (string, bool) {
	n, ok := c.Fields[field]
	return n, ok
}
