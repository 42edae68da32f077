package gpu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The fixtures in testdata/ are copied unchanged from shared/fixtures, with
// MANIFEST.json, whose "expect" objects are the reference: every expected
// value of every fixture of the kinds below is asserted here.

type manifestEntry struct {
	File   string         `json:"file"`
	Kind   string         `json:"kind"`
	Expect map[string]any `json:"expect"`
}

// notCovered lists fixtures of the covered kinds that this package does not
// parse, with the reason.
var notCovered = map[string]string{
	"nvidia-smi/cases/csv-compute-apps-mig-h100.txt":      "--query-compute-apps output, not --query-gpu (TestComputeAppsManifest)",
	"nvidia-smi/cases/csv-compute-apps-not-supported.txt": "--query-compute-apps output, not --query-gpu (TestComputeAppsManifest)",
}

// notAsserted lists expect keys that are about another parser's input.
var notAsserted = map[string]string{
	"kernel_log": "syslog NVRM lines; the kernel-log parser's job",
	"note":       "prose",
}

func loadManifest(t *testing.T) []manifestEntry {
	t.Helper()
	b, err := os.ReadFile("testdata/MANIFEST.json")
	if err != nil {
		t.Fatal(err)
	}
	var all []manifestEntry
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	var out []manifestEntry
	for _, e := range all {
		switch e.Kind {
		case "capture", "nvidia-smi-csv", "nvidia-smi-failure":
			if _, skip := notCovered[e.File]; !skip {
				out = append(out, e)
			}
		}
	}
	if len(out) != 14 {
		t.Fatalf("manifest has %d covered GPU fixtures, want 14 (5 captures, 4 CSV cases, 5 failures)", len(out))
	}
	return out
}

func readFixture(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// captureSection returns the body of the capture section whose title starts
// with title ("load :: query-gpu"): the lines after the banner that closes
// its "# $ command" header, up to the next banner or end.
func captureSection(t testing.TB, capture []byte, title string) []byte {
	t.Helper()
	lines := strings.Split(string(capture), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "# "+title) {
			continue
		}
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "#####") {
			j++
		}
		var body []string
		for j++; j < len(lines) && !strings.HasPrefix(lines[j], "#####"); j++ {
			body = append(body, lines[j])
		}
		return []byte(strings.Join(body, "\n"))
	}
	t.Fatalf("no section %q", title)
	return nil
}

// csvOf returns the header and the rows of a CSV section (it ends at the
// first blank line).
func csvOf(section []byte) (header string, rows []string) {
	for _, l := range strings.Split(string(section), "\n") {
		if strings.TrimSpace(l) == "" {
			if header != "" {
				break
			}
			continue
		}
		if header == "" {
			header = l
		} else {
			rows = append(rows, l)
		}
	}
	return header, rows
}

// jsonl runs WriteJSONL and decodes its records.
func jsonl(t *testing.T, in []byte, fields []string) ([]map[string]any, error) {
	t.Helper()
	var out bytes.Buffer
	err := WriteJSONL(&out, bytes.NewReader(in), fields)
	var recs []map[string]any
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if jerr := json.Unmarshal(sc.Bytes(), &m); jerr != nil {
			t.Fatalf("output line is not JSON: %v: %s", jerr, sc.Bytes())
		}
		recs = append(recs, m)
	}
	return recs, err
}

func ofType(recs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["type"] == typ {
			out = append(out, r)
		}
	}
	return out
}

// assertRecord checks every expected key of want against got, exactly:
// numbers as numbers, tokens as their literal strings.
func assertRecord(t *testing.T, where string, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: key %q missing (want %#v)", where, k, w)
			continue
		}
		if g != w {
			t.Errorf("%s: %q = %#v (%T), want %#v (%T)", where, k, g, g, w, w)
		}
	}
}

// gpuValue returns what Parser put in g for a WriteJSONL key, in the
// manifest's terms: a number when valid, else the literal token.
func gpuValue(g event.GPU, key string) (any, bool) {
	num := func(r event.Reading) any {
		if r.Valid() {
			return r.Value
		}
		return r.Raw
	}
	txt := func(x event.Text) any { return x.S }
	switch key {
	case "index":
		return float64(g.Index), true
	case "name":
		return txt(g.Name), true
	case "pci_bus_id":
		return txt(g.BusID), true
	case "util_gpu_pct":
		return num(g.UtilGPUPct), true
	case "util_mem_pct":
		return num(g.UtilMemPct), true
	case "mem_used_mib":
		return num(g.MemUsedMiB), true
	case "mem_total_mib":
		return num(g.MemTotalMiB), true
	case "power_draw_w":
		return num(g.PowerDrawW), true
	case "power_limit_w":
		return num(g.PowerLimitW), true
	case "temp_c":
		return num(g.TempC), true
	case "sm_clock_mhz":
		return num(g.SMClockMHz), true
	case "mem_clock_mhz":
		return num(g.MemClockMHz), true
	case "pstate":
		return txt(g.PState), true
	case "pcie_gen_current":
		return num(g.PCIeGenCurrent), true
	case "pcie_width_current":
		return num(g.PCIeWidthCurrent), true
	case "fan_speed_pct":
		return num(g.FanPct), true
	case "mig_mode":
		return txt(g.MIGMode), true
	case "pcie.link.gen.max":
		return num(g.PCIeGenMax), true
	case "clocks_event_reasons.active":
		if g.ClockEvents.Status == event.CellOK {
			return fmt.Sprintf("0x%016X", uint64(g.ClockEvents.Mask)), true
		}
		return g.ClockEvents.Raw, true
	}
	return nil, false
}

// assertParsedGPU checks Parser's typed result against the expected keys it
// maps (the others are only in WriteJSONL's output).
func assertParsedGPU(t *testing.T, where string, g event.GPU, want map[string]any) {
	t.Helper()
	checked := 0
	for k, w := range want {
		v, ok := gpuValue(g, k)
		if !ok {
			continue
		}
		checked++
		if v != w {
			t.Errorf("%s (Parser): %q = %#v, want %#v", where, k, v, w)
		}
	}
	if checked < 15 {
		t.Errorf("%s (Parser): only %d expected keys map to GPU fields", where, checked)
	}
}

func TestManifestFixtures(t *testing.T) {
	for _, e := range loadManifest(t) {
		t.Run(filepath.Base(e.File), func(t *testing.T) {
			in := readFixture(t, e.File)
			for k := range e.Expect {
				if _, ok := notAsserted[k]; ok {
					continue
				}
				if !slices.Contains(handledKeys[e.Kind], k) {
					t.Errorf("expect key %q is not asserted by this test", k)
				}
			}
			switch e.Kind {
			case "capture":
				testCapture(t, in, e.Expect)
			case "nvidia-smi-csv":
				testCSVCase(t, in, e.Expect)
			case "nvidia-smi-failure":
				testFailureCase(t, in, e.Expect)
			}
		})
	}
}

// handledKeys are the expect keys each kind's test asserts.
var handledKeys = map[string][]string{
	"capture":            {"section", "state", "csv_columns", "gpus"},
	"nvidia-smi-csv":     {"header", "columns", "gpus", "rows", "tokens", "query_fields", "nounits"},
	"nvidia-smi-failure": {"failure_class", "pci_bus_id", "reason", "needs_reboot", "nvml_library_version"},
}

func testCapture(t *testing.T, in []byte, want map[string]any) {
	section, _ := want["section"].(string)
	if !strings.HasPrefix(section, "load :: query-gpu") || want["state"] != "load" {
		t.Fatalf("unexpected section %q / state %v", section, want["state"])
	}
	header, rows := csvOf(captureSection(t, in, section))
	names := strings.Split(header, ", ")
	if float64(len(names)) != want["csv_columns"] {
		t.Errorf("header has %d columns, want %v", len(names), want["csv_columns"])
	}
	wantGPUs := want["gpus"].([]any)

	// WriteJSONL over header + rows.
	recs, err := jsonl(t, []byte(header+"\n"+strings.Join(rows, "\n")+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := ofType(recs, "gpu")
	if len(got) != len(wantGPUs) {
		t.Fatalf("%d GPU records, want %d", len(got), len(wantGPUs))
	}
	for i, w := range wantGPUs {
		assertRecord(t, fmt.Sprint("gpu ", i), got[i], w.(map[string]any))
	}
	// Every column came out (the keys are unique).
	if len(got[0]) != len(names)+1 {
		t.Errorf("record has %d keys, want %d columns + type", len(got[0]), len(names))
	}

	// The whole capture file gives exactly the load section's records: the
	// other sections (help text, -q, the idle CSV, compute apps) add none.
	whole, err := jsonl(t, in, nil)
	if err != nil {
		t.Fatalf("whole capture: %v", err)
	}
	if !reflect.DeepEqual(whole, recs) {
		t.Errorf("whole capture gives %d records, the load section %d", len(whole), len(recs))
	}

	// Parser, built from the header (units stripped), over the same rows.
	p, err := NewParser(names)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range rows {
		g, err := p.Parse([]byte(row))
		if err != nil {
			t.Fatal(err)
		}
		assertParsedGPU(t, "gpu", g, wantGPUs[i].(map[string]any))
	}
}

func testCSVCase(t *testing.T, in []byte, want map[string]any) {
	var fields []string
	if qf, ok := want["query_fields"].([]any); ok {
		for _, f := range qf {
			fields = append(fields, f.(string))
		}
	}
	if h, ok := want["header"].(bool); !ok {
		t.Fatal("expect.header missing")
	} else if h {
		header, _ := csvOf(in[bytes.IndexByte(in, '\n')+1:])
		if n := len(strings.Split(header, ", ")); float64(n) != want["columns"] {
			t.Errorf("header has %d columns, want %v", n, want["columns"])
		}
		if _, ok := headerFields([]byte(header)); !ok {
			t.Error("header line not recognised as a header")
		}
	}
	if nu, ok := want["nounits"].(bool); ok && nu {
		// Values carry no units: every data cell is a bare number.
		for _, l := range payloadLines(in)[1:] {
			for _, c := range splitCells(nil, []byte(l)) {
				if _, ok := parseDecimal(c); !ok {
					t.Errorf("nounits cell %q is not a bare number", c)
				}
			}
		}
	}
	switch {
	case want["gpus"] != nil:
		recs, err := jsonl(t, in, fields)
		if err != nil {
			t.Fatal(err)
		}
		got := ofType(recs, "gpu")
		wantGPUs := want["gpus"].([]any)
		if len(got) != len(wantGPUs) {
			t.Fatalf("%d GPU records, want %d", len(got), len(wantGPUs))
		}
		for i, w := range wantGPUs {
			assertRecord(t, "gpu", got[i], w.(map[string]any))
		}
		header, rows := csvOf(in[bytes.IndexByte(in, '\n')+1:])
		p, err := NewParser(strings.Split(header, ", "))
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range rows {
			g, err := p.Parse([]byte(row))
			if err != nil {
				t.Fatal(err)
			}
			assertParsedGPU(t, "gpu", g, wantGPUs[i].(map[string]any))
		}
	case fields != nil:
		// Headerless rows named by the query's field list.
		recs, err := jsonl(t, in, fields)
		if err != nil {
			t.Fatal(err)
		}
		got := ofType(recs, "gpu")
		wantRows := want["rows"].([]any)
		if len(got) != len(wantRows) || len(recs) != len(got) {
			t.Fatalf("%d GPU records (%d in all), want %d", len(got), len(recs), len(wantRows))
		}
		for i, w := range wantRows {
			wm := map[string]any{}
			for field, v := range w.(map[string]any) {
				wm[jsonKeyOf(t, field)] = v
			}
			assertRecord(t, "row", got[i], wm)
			if len(got[i]) != len(wm)+1 {
				t.Errorf("row %d has keys %v, want only %v and type", i, got[i], wm)
			}
		}
	default:
		// Positional cells only (the query was not published).
		lines := payloadLines(in)
		wantRows := want["rows"].([]any)
		if len(lines) != len(wantRows) {
			t.Fatalf("%d payload lines, want %d", len(lines), len(wantRows))
		}
		for i, w := range wantRows {
			cells := splitCells(nil, []byte(lines[i]))
			wc := w.([]any)
			if len(cells) != len(wc) {
				t.Fatalf("row %d: %d cells, want %d", i, len(cells), len(wc))
			}
			for j := range wc {
				if string(cells[j]) != wc[j] {
					t.Errorf("row %d cell %d = %q, want %q", i, j, cells[j], wc[j])
				}
			}
		}
		for _, tk := range want["tokens"].([]any) {
			m := tk.(map[string]any)
			row, col := int(m["row"].(float64)), int(m["col"].(float64))
			cell := splitCells(nil, []byte(lines[row]))[col]
			st, raw := token(cell)
			if st == event.CellOK || raw != m["value"] {
				t.Errorf("row %d col %d: token %v %q, want the literal %q", row, col, st, raw, m["value"])
			}
			// As a reading it keeps its token, never 0.
			if r := reading(cell, "%"); r.Valid() || r.Raw != m["value"] {
				t.Errorf("row %d col %d as reading = %+v", row, col, r)
			}
		}
	}
}

// payloadLines returns the fixture's lines after its "# source:" line and
// any pasted command line.
func payloadLines(in []byte) []string {
	var out []string
	for i, l := range strings.Split(strings.TrimRight(string(in), "\n"), "\n") {
		if i == 0 && strings.HasPrefix(l, "# source:") || isCommandEcho([]byte(l)) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// jsonKeyOf maps a --query-gpu field name to its WriteJSONL key.
func jsonKeyOf(t *testing.T, field string) string {
	t.Helper()
	i, ok := specByName[field]
	if !ok || fieldSpecs[i].key == "" {
		return field
	}
	return fieldSpecs[i].key
}

func testFailureCase(t *testing.T, in []byte, want map[string]any) {
	recs, err := jsonl(t, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0]["type"] != "failure" {
		t.Fatalf("records %v, want one failure", recs)
	}
	got := recs[0]
	w := map[string]any{}
	for _, k := range handledKeys["nvidia-smi-failure"] {
		if v, ok := want[k]; ok {
			w[k] = v
		}
	}
	if _, ok := w["failure_class"]; !ok {
		t.Fatal("expect.failure_class missing")
	}
	if _, ok := w["pci_bus_id"]; !ok {
		t.Fatal("expect.pci_bus_id missing")
	}
	assertRecord(t, "failure", got, w)

	// ClassifyFailure on the failure line itself agrees.
	for _, l := range payloadLines(in) {
		f, ok := ClassifyFailure([]byte(l))
		if !ok {
			continue
		}
		if string(f.Class) != want["failure_class"] {
			t.Errorf("ClassifyFailure(%q).Class = %q, want %v", l, f.Class, want["failure_class"])
		}
		bus, _ := want["pci_bus_id"].(string)
		if f.BusID != bus {
			t.Errorf("BusID = %q, want %q", f.BusID, bus)
		}
		if r, ok := want["reason"].(string); ok && f.Reason != r {
			t.Errorf("Reason = %q, want %q", f.Reason, r)
		}
		if nr, _ := want["needs_reboot"].(bool); f.NeedsReboot != nr {
			t.Errorf("NeedsReboot = %v, want %v", f.NeedsReboot, nr)
		}
		if f.Line != strings.TrimSpace(l) {
			t.Errorf("Line = %q, want %q", f.Line, l)
		}
		return
	}
	t.Error("no line classified as a failure")
}

// TestCaptureHelpQueryGPU checks the field probe against the
// --help-query-gpu section of every capture: drivers 590 and 595 offer all
// of flightdeck's fields under their preferred names.
func TestCaptureHelpQueryGPU(t *testing.T) {
	files, err := filepath.Glob("testdata/nvidia-smi/captures/*.txt")
	if err != nil || len(files) != 5 {
		t.Fatalf("captures: %v %v", files, err)
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		set, err := ParseHelpQueryGPU(captureSection(t, in, "capabilities :: help-query-gpu"))
		if err != nil {
			t.Fatal(err)
		}
		for _, alias := range []string{"clocks.sm", "clocks.mem", "clocks_throttle_reasons.active", "gpu_bus_id", "index"} {
			if !set[alias] {
				t.Errorf("%s: %q not in the supported set", filepath.Base(f), alias)
			}
		}
		// Description lines that start with a quoted word are not fields.
		if set["0: Default"] || len(set) < 200 {
			t.Errorf("%s: %d names, \"0: Default\"=%v", filepath.Base(f), len(set), set["0: Default"])
		}
		q, err := QueryFields(set)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(q, DefaultFields()) {
			t.Errorf("%s: query %v, want %v", filepath.Base(f), q, DefaultFields())
		}
		// The field list of the capture's own query-gpu header matches too.
		header, _ := csvOf(captureSection(t, in, "load :: query-gpu"))
		hdr, ok := headerFields([]byte(header))
		if !ok {
			t.Fatalf("%s: header not recognised", filepath.Base(f))
		}
		for _, h := range hdr {
			if !set[h] {
				t.Errorf("%s: header field %q not in --help-query-gpu", filepath.Base(f), h)
			}
		}
	}
}
