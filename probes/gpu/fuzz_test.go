package gpu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// printable reports whether s is safe for a terminal (what cleanText
// promises).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unsafeRune(r) {
			return false
		}
	}
	return true
}

func checkReading(t *testing.T, name string, r event.Reading) {
	t.Helper()
	switch {
	case r.Status == event.CellOK && (r.Raw != "" || math.IsNaN(r.Value) || math.IsInf(r.Value, 0)):
		t.Errorf("%s: OK reading %+v", name, r)
	case r.Status != event.CellOK && r.Value != 0:
		t.Errorf("%s: non-value with a number %+v", name, r)
	case !printable(r.Raw):
		t.Errorf("%s: raw %q not printable", name, r.Raw)
	}
}

// FuzzParseRow: the row parser never panics, never turns a non-number into
// a value, and only returns printable strings.
func FuzzParseRow(f *testing.F) {
	f.Add([]byte(h200Row(0)))
	f.Add([]byte("0, [N/A], N/A, [Not Supported], [Unknown Error], [GPU is lost], ERR!, , [Requested functionality has been deprecated], [x]"))
	f.Add([]byte("1, NVIDIA\x1b[0m, 53 %, 81559 MiB, 123.00 W, 1746 MHz, 0x1F, -1.5, 1e3, 99999999999999999999.5"))
	f.Add([]byte("2,,, ,  ,\r"))
	p := mustParser(f, DefaultFields())
	f.Fuzz(func(t *testing.T, line []byte) {
		var g event.GPU
		err := p.ParseInto(&g, line)
		if err != nil {
			var re *RowError
			if !errors.As(err, &re) || !printable(re.Text) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if g.Index < 0 {
			t.Fatalf("index %d", g.Index)
		}
		for i, r := range []event.Reading{g.UtilGPUPct, g.UtilMemPct, g.MemUsedMiB, g.MemTotalMiB, g.PowerDrawW,
			g.PowerLimitW, g.TempC, g.SMClockMHz, g.MemClockMHz, g.SMClockMax, g.FanPct,
			g.PCIeGenCurrent, g.PCIeGenMax, g.PCIeWidthCurrent, g.PCIeWidthMax} {
			checkReading(t, strconv.Itoa(i), r)
			if r.Status == event.CellAbsent {
				t.Fatalf("reading %d Absent although queried", i)
			}
		}
		for _, x := range []event.Text{g.Name, g.BusID, g.UUID, g.PState, g.Persistence, g.ECCMode, g.MIGMode} {
			if !printable(x.S) {
				t.Fatalf("text %q", x.S)
			}
		}
		if !printable(g.ClockEvents.Raw) || g.ClockEvents.Status != event.CellOK && g.ClockEvents.Mask != 0 {
			t.Fatalf("events %+v", g.ClockEvents)
		}
	})
}

// FuzzParseDecimal: the fast number parser agrees with strconv.ParseFloat
// on every input it accepts.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0", "631.95", "-1.5", "12345678901234567890", "0.000000000000000000000001", "5.", ".5", "1e5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseDecimal([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || v != want {
			t.Fatalf("parseDecimal(%q) = %v, strconv %v %v", s, v, want, err)
		}
		if strings.ContainsAny(s, "eExXpP+_ \t") {
			t.Fatalf("accepted %q", s)
		}
	})
}

// FuzzWriteJSONL: the header reader and writer turn any input into valid
// JSON Lines (one object per line, each with a type) and at most a
// GarbledError, or refuse it as not --query-gpu output having written
// nothing.
func FuzzWriteJSONL(f *testing.F) {
	f.Add([]byte("index, name, utilization.gpu [%]\n0, NVIDIA H200, 5 %\n1, x\n"), "")
	f.Add([]byte("# source: x\n❯ nvidia-smi --loop=1\n41, 6, 13\n"), "temperature.gpu,utilization.gpu,utilization.memory")
	f.Add([]byte("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n"), "")
	f.Add([]byte("No devices were found\nJul 01 kernel: NVRM: GPU 0000:01:00.0: x, y\n"), "index")
	f.Add([]byte("type, type, index\n\"a\\\", \x00, 1\n"), "")
	f.Add([]byte("type, type, index\n\"a\\\", \x01, 1\n"), "")
	f.Add([]byte("####################\n# nvidia_gpu_exporter GPU capture\n####################\n\n####################\n# load :: query-gpu (csv)\n# $ nvidia-smi\n####################\nindex, name\n0, x\n"), "")
	f.Add([]byte("\x1f\x8b\x08\x00"), "")
	f.Add([]byte("\xef\xbb\xbfindex, name\n0, gpu-nvidia-smi-01\n1, nvidia-smi\n$ nvidia-smi -q\n"), "")
	f.Fuzz(func(t *testing.T, in []byte, fields string) {
		var fl []string
		if fields != "" {
			fl = strings.Split(fields, ",")
		}
		var out bytes.Buffer
		err := WriteJSONL(&out, bytes.NewReader(in), fl)
		var ge *GarbledError
		notGPU := errors.Is(err, ErrNotQueryGPU)
		if err != nil && !errors.As(err, &ge) && !notGPU {
			t.Fatalf("error %v", err)
		}
		if ge != nil && (ge.Count == 0 || len(ge.Rows) == 0 || ge.Rows[0].Line < 1) {
			t.Fatalf("garbled %+v", ge)
		}
		if notGPU && out.Len() > 0 {
			t.Fatalf("%v, but wrote %q", err, out.Bytes())
		}
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("not JSON: %v: %q", err, sc.Bytes())
			}
			if m["type"] != "gpu" && m["type"] != "failure" {
				t.Fatalf("type %v", m["type"])
			}
		}
	})
}

// FuzzHeaderFields: a recognised header yields names without units that
// are all field-name shaped.
func FuzzHeaderFields(f *testing.F) {
	f.Add([]byte("index, utilization.gpu [%], memory.used [MiB]"))
	f.Add([]byte("Enabled, Disabled"))
	f.Add([]byte("name [x], a.b [ ]"))
	f.Fuzz(func(t *testing.T, line []byte) {
		names, ok := headerFields(line)
		if !ok {
			return
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, " []") {
				t.Fatalf("name %q from %q", n, line)
			}
			for i := 0; i < len(n); i++ {
				if !isNameByte(n[i]) {
					t.Fatalf("name %q", n)
				}
			}
		}
	})
}

// FuzzClassifyFailure: the classifier never panics; a match has a class in
// kebab case, a bus id of hex digits, ':' and '.', and printable text.
func FuzzClassifyFailure(f *testing.F) {
	for _, s := range []string{
		"Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error",
		"Unable to detect the device handle for GPU0000:B1:00.0: GPU is lost.  Reboot the system to recover this GPU",
		"Unable to determine the device handle for GPU 0000:01:00.0:",
		"No devices were found",
		"NVIDIA-SMI has failed because it couldn‘t communicate with the NVIDIA driver.",
		"Failed to initialize NVML: Unknown Error",
		"Failed to initialize NVML: \x1b]0;x\x07",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fl, ok := ClassifyFailure(line)
		if !ok {
			if fl != (event.GPUFailure{}) {
				t.Fatalf("no match but %+v", fl)
			}
			return
		}
		c := string(fl.Class)
		if c == "" || len(c) > len("nvml-init-")+maxClassLen || strings.HasPrefix(c, "-") || strings.HasSuffix(c, "-") || strings.Contains(c, "--") {
			t.Fatalf("class %q", c)
		}
		for _, r := range c {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				t.Fatalf("class %q", c)
			}
		}
		for i := 0; i < len(fl.BusID); i++ {
			if !isBusIDByte(fl.BusID[i]) {
				t.Fatalf("bus id %q", fl.BusID)
			}
		}
		if !printable(fl.Reason) || !printable(fl.Line) || fl.Line == "" {
			t.Fatalf("text %+v", fl)
		}
		if fl.NeedsReboot != (fl.Class == event.GPUFailLost) {
			t.Fatalf("reboot %+v", fl)
		}
	})
}
