package gpu

import (
	"errors"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"math"
	"strconv"
	"strings"
	"testing"
)

// h200Row is one row of flightdeck's full query (DefaultFields order) as the
// simulated 8× H200 host prints it.
func h200Row(idx int) string {
	return strconv.Itoa(idx) + ", NVIDIA H200, 00000000:" + strconv.FormatInt(int64(0x18+idx*0x10), 16) +
		":00.0, GPU-00000000-0000-0000-0000-00000000000" + strconv.Itoa(idx) +
		", 97, 41, 121315, 143771, 612.48, 700.00, 61, 1980, 3201, 1980, [N/A], P0, 5, 5, 16, 16, 0x0000000000000000, Enabled, Enabled, Disabled"
}

func mustParser(t testing.TB, fields []string) *Parser {
	t.Helper()
	p, err := NewParser(fields)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseFullRow(t *testing.T) {
	p := mustParser(t, DefaultFields())
	g, err := p.Parse([]byte(h200Row(3)))
	if err != nil {
		t.Fatal(err)
	}
	if g.Index != 3 || g.Name.S != "NVIDIA H200" || g.Name.Status != event.CellOK || g.BusID.S != "00000000:48:00.0" {
		t.Errorf("identity: %+v %+v %+v", g.Index, g.Name, g.BusID)
	}
	nums := []struct {
		name string
		r    event.Reading
		want float64
	}{
		{"util", g.UtilGPUPct, 97}, {"utilmem", g.UtilMemPct, 41}, {"used", g.MemUsedMiB, 121315},
		{"total", g.MemTotalMiB, 143771}, {"draw", g.PowerDrawW, 612.48}, {"limit", g.PowerLimitW, 700},
		{"temp", g.TempC, 61}, {"sm", g.SMClockMHz, 1980}, {"mem", g.MemClockMHz, 3201},
		{"smmax", g.SMClockMax, 1980}, {"gen", g.PCIeGenCurrent, 5}, {"genmax", g.PCIeGenMax, 5},
		{"width", g.PCIeWidthCurrent, 16}, {"widthmax", g.PCIeWidthMax, 16},
	}
	for _, n := range nums {
		if !n.r.Valid() || n.r.Value != n.want || n.r.Raw != "" {
			t.Errorf("%s = %+v, want %v", n.name, n.r, n.want)
		}
	}
	if g.FanPct.Status != event.CellNA || g.FanPct.Raw != "[N/A]" || g.FanPct.Value != 0 {
		t.Errorf("fan = %+v, want [N/A]", g.FanPct)
	}
	if g.PState.S != "P0" || g.Persistence.S != "Enabled" || g.ECCMode.S != "Enabled" || g.MIGMode.S != "Disabled" {
		t.Errorf("text: %+v %+v %+v %+v", g.PState, g.Persistence, g.ECCMode, g.MIGMode)
	}
	if g.ClockEvents.Status != event.CellOK || g.ClockEvents.Mask != 0 || g.Lost {
		t.Errorf("events %+v lost %v", g.ClockEvents, g.Lost)
	}
}

func TestParseTokens(t *testing.T) {
	p := mustParser(t, []string{"index", "utilization.gpu", "name", "clocks_throttle_reasons.active"})
	cases := []struct {
		cell   string
		status event.CellStatus
		raw    string
	}{
		{"[N/A]", event.CellNA, "[N/A]"},
		{"N/A", event.CellNA, "N/A"},
		{"[Not Supported]", event.CellNotSupported, "[Not Supported]"},
		{"[Unknown Error]", event.CellUnknownError, "[Unknown Error]"},
		{"[GPU is lost]", event.CellLost, "[GPU is lost]"},
		{"ERR!", event.CellErr, "ERR!"},
		{"", event.CellEmpty, ""},
		{"[Requested functionality has been deprecated]", event.CellDeprecated, "[Requested functionality has been deprecated]"},
		{"[Insufficient Permissions]", event.CellOther, "[Insufficient Permissions]"},
		{"abc", event.CellInvalid, "abc"},
		{"1.2.3", event.CellInvalid, "1.2.3"},
		{"0x10", event.CellInvalid, "0x10"},
		{"NaN", event.CellInvalid, "NaN"},
		{"12 GiB", event.CellInvalid, "12 GiB"}, // a unit that is not the field's
		{".5", event.CellInvalid, ".5"},
		{"5.", event.CellInvalid, "5."},
		{"-", event.CellInvalid, "-"},
	}
	for _, c := range cases {
		line := "0, " + c.cell + ", " + c.cell + ", " + c.cell
		g, err := p.Parse([]byte(line))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if g.UtilGPUPct.Status != c.status || g.UtilGPUPct.Raw != c.raw || g.UtilGPUPct.Value != 0 {
			t.Errorf("reading %q = %+v, want %v %q", c.cell, g.UtilGPUPct, c.status, c.raw)
		}
		if c.cell == "0x10" { // a valid mask, but not a number
			if g.ClockEvents.Status != event.CellOK || g.ClockEvents.Mask != 0x10 {
				t.Errorf("mask %q = %+v", c.cell, g.ClockEvents)
			}
		} else if g.ClockEvents.Status != c.status || g.ClockEvents.Raw != c.raw {
			t.Errorf("mask %q = %+v, want %v", c.cell, g.ClockEvents, c.status)
		}
		wantText := c.status
		if c.status == event.CellInvalid {
			wantText = event.CellOK // any text is a valid name
		}
		if g.Name.Status != wantText || g.Name.S != c.raw {
			t.Errorf("text %q = %+v, want %v", c.cell, g.Name, wantText)
		}
		if g.Lost != (c.status == event.CellLost) {
			t.Errorf("%q: Lost = %v", c.cell, g.Lost)
		}
	}
}

func TestParseUnitsAndNumbers(t *testing.T) {
	p := mustParser(t, []string{"index", "utilization.gpu", "memory.used", "power.draw", "clocks.sm", "temperature.gpu", "clocks_event_reasons.active"})
	g, err := p.Parse([]byte("7, 53 %, 81559 MiB, 123.00 W, 1746 MHz, 84, 0x00000000000001FF"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Index != 7 || g.UtilGPUPct.Value != 53 || g.MemUsedMiB.Value != 81559 || g.PowerDrawW.Value != 123 ||
		g.SMClockMHz.Value != 1746 || g.TempC.Value != 84 || g.ClockEvents.Mask != 0x1FF {
		t.Errorf("%+v", g)
	}
	// Fields not queried are Absent, never a zero value that reads as OK.
	if g.MemTotalMiB.Status != event.CellAbsent || g.Name.Status != event.CellAbsent || g.PState.Status != event.CellAbsent ||
		g.FanPct.Status != event.CellAbsent || g.UUID.Status != event.CellAbsent {
		t.Errorf("unqueried fields: %+v %+v %+v", g.MemTotalMiB, g.Name, g.PState)
	}
	if want := event.ReasonGPUIdle | event.ReasonHWSlowdown | event.ReasonDisplayClockSetting; g.ClockEvents.Mask&want != want {
		t.Error("mask bits")
	}
	// Negative and long numbers match strconv.
	for _, s := range []string{"-5", "0.1", "12345678901234567890", "3.14159265358979323846", "0.000001"} {
		v, ok := parseDecimal([]byte(s))
		want, _ := strconv.ParseFloat(s, 64)
		if !ok || v != want {
			t.Errorf("parseDecimal(%q) = %v %v, want %v", s, v, ok, want)
		}
	}
}

func TestParseRowErrors(t *testing.T) {
	p := mustParser(t, []string{"index", "name", "utilization.gpu"})
	orig := event.GPU{Index: 42}
	for _, line := range []string{
		"0, NVIDIA H200",                // too few cells
		"0, NVIDIA H200, 5, 6",          // too many
		"0, NVIDIA H200, 5, 6, 7, 8",    // many too many
		"x, NVIDIA H200, 5",             // index not a number
		"[GPU is lost], NVIDIA H200, 5", // index is a token
		"-1, NVIDIA H200, 5",
		"",
	} {
		g := orig
		err := p.ParseInto(&g, []byte(line))
		var re *RowError
		if !errors.As(err, &re) {
			t.Errorf("%q: err = %v, want *RowError", line, err)
			continue
		}
		if re.Text != line || !strings.Contains(err.Error(), strconv.Quote(line)) {
			t.Errorf("%q: error does not name the line: %v", line, err)
		}
		if g != orig {
			t.Errorf("%q: destination changed on error", line)
		}
	}
	_, err := p.Parse([]byte("0, NVIDIA H200, 5, 6, 7, 8"))
	if !strings.Contains(err.Error(), "6 cells, want 3") {
		t.Errorf("count message: %v", err)
	}
}

func TestNewParserErrors(t *testing.T) {
	if _, err := NewParser([]string{"name", "utilization.gpu"}); err == nil {
		t.Error("no index: want error")
	}
	if _, err := NewParser([]string{"index", "clocks.sm", "clocks.current.sm"}); err == nil {
		t.Error("one field under two names: want error")
	}
	p, err := NewParser([]string{"index", "memory.used [MiB]", "kmd_version"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Parse([]byte("1, 5 MiB, 595.71.05"))
	if err != nil || g.MemUsedMiB.Value != 5 {
		t.Errorf("header-style names: %+v %v", g.MemUsedMiB, err)
	}
}

func TestParseSanitisesText(t *testing.T) {
	p := mustParser(t, []string{"index", "name", "utilization.gpu"})
	g, err := p.Parse([]byte("0, NVIDIA\x1b[31mH200\u202e, 5\x07"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Name.Status != event.CellInvalid || strings.ContainsAny(g.Name.S, "\x1b\u202e") {
		t.Errorf("name = %+v", g.Name)
	}
	if g.UtilGPUPct.Status != event.CellInvalid || strings.Contains(g.UtilGPUPct.Raw, "\x07") {
		t.Errorf("util = %+v", g.UtilGPUPct)
	}
	// Non-ASCII printable text is fine.
	g, _ = p.Parse([]byte("0, Grafikkarte für alle, 5"))
	if g.Name.Status != event.CellOK || g.Name.S != "Grafikkarte für alle" {
		t.Errorf("name = %+v", g.Name)
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	p := mustParser(t, DefaultFields())
	rows := make([][]byte, 8)
	for i := range rows {
		rows[i] = []byte(h200Row(i))
	}
	var g event.GPU
	for _, r := range rows { // warm the string table
		if err := p.ParseInto(&g, r); err != nil {
			t.Fatal(err)
		}
	}
	n := testing.AllocsPerRun(100, func() {
		for _, r := range rows {
			_ = p.ParseInto(&g, r)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per 8-GPU tick, want 0", n)
	}
}

func TestSplitCells(t *testing.T) {
	got := splitCells(nil, []byte(" a ,b, c,d , , 1,5\r"))
	want := []string{"a ,b", "c,d", "", "1,5"}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("cell %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestParseDecimalMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "1", "99.5", "631.95", "84.24", "111.5", "26.2", "433.78", "1e5", "+1", "0.30000000000000004"} {
		v, ok := parseDecimal([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if strings.ContainsAny(s, "e+") {
			if ok {
				t.Errorf("%q accepted", s)
			}
			continue
		}
		if !ok || err != nil || v != want || math.Signbit(v) != math.Signbit(want) {
			t.Errorf("parseDecimal(%q) = %v, %v; want %v", s, v, ok, want)
		}
	}
}
