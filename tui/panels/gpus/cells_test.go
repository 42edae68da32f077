package gpus

import (
	"math"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

func TestRxTxCellValues(t *testing.T) {
	for _, c := range []struct {
		rx, tx event.Reading
		want   string
		tn     style.Token
	}{
		{tuitest.OK(0), tuitest.OK(0), "0.0/0.0", style.Text},
		{tuitest.OK(10239), tuitest.OK(10240), "10.0/10", style.Text}, // 9.999 rounds to 10.0 below 10
		{tuitest.OK(1024 * 61035), tuitest.OK(51), "61035/0.0", style.Text},
		{tuitest.OK(-5), tuitest.OK(1024), "bad/1.0", style.Warn},
		{tuitest.OK(math.NaN()), tuitest.OK(math.Inf(1)), "bad/bad", style.Warn},
		{tuitest.OK(1e300), tuitest.Bad(event.CellLost, "[GPU is lost]"), "bad/LOST", style.Crit},
		{tuitest.Bad(event.CellAbsent, ""), tuitest.Bad(event.CellUnknownError, "[Unknown Error]"), "n/q/UNK", style.Warn},
	} {
		g := event.GPU{PCIeRxKBs: c.rx, PCIeTxKBs: c.tx}
		if got := rxTxCell(&g); got.text != c.want || got.tone != c.tn {
			t.Errorf("rx %v tx %v: %q (tone %d), want %q (tone %d)", c.rx, c.tx, got.text, got.tone, c.want, c.tn)
		}
	}
}

// FuzzRxTxCell: any reading gives a short cell; a number only for a
// value a PCIe link can carry.
func FuzzRxTxCell(f *testing.F) {
	for _, v := range []float64{0, 1, 1023.9, 10240, 1e9, -1, math.NaN(), math.Inf(-1), 1e308} {
		f.Add(v, uint8(event.CellOK))
	}
	f.Add(0.0, uint8(event.CellLost))
	f.Fuzz(func(t *testing.T, v float64, st uint8) {
		r := event.Reading{Value: v, Status: event.CellStatus(st % 12)}
		c := mibs(r)
		if len(c.text) > 6 || c.text == "" {
			t.Fatalf("%v: %q", r, c.text)
		}
		numeric := c.text[0] >= '0' && c.text[0] <= '9'
		if numeric != (r.Valid() && v >= 0 && v/kibPerMiB < maxRxTxMiBs) {
			t.Fatalf("%v: %q", r, c.text)
		}
	})
}

func TestProcsSummary(t *testing.T) {
	g := tuitest.H200(3)
	g.UUID = tuitest.Txt("GPU-3")
	on := func(name string, used event.Reading) event.ComputeApp {
		return event.ComputeApp{PID: 1, Name: tuitest.Txt(name), UsedMiB: used, BusID: tuitest.Txt("0000:48:00.0")} // g's bus, short form
	}
	for _, c := range []struct {
		name string
		apps []event.ComputeApp
		want procSummary
	}{
		{"nil: not read", nil, procSummary{}},
		{"empty: none", []event.ComputeApp{}, procSummary{known: true}},
		{"another GPU's", []event.ComputeApp{{Name: tuitest.Txt("x"), UsedMiB: tuitest.OK(9), BusID: tuitest.Txt("00000000:18:00.0")}}, procSummary{known: true}},
		{"by bus id", []event.ComputeApp{on("python3", tuitest.OK(10))}, procSummary{known: true, n: 1, top: "python3"}},
		{"by UUID when the bus id is not read", []event.ComputeApp{{Name: tuitest.Txt("vllm"), UsedMiB: tuitest.OK(1), BusID: event.Text{S: "[N/A]", Status: event.CellNA}, UUID: tuitest.Txt("GPU-3")}},
			procSummary{known: true, n: 1, top: "vllm"}},
		{"the largest names it", []event.ComputeApp{on("small", tuitest.OK(10)), on("big", tuitest.OK(90000)), on("mid", tuitest.OK(500))}, procSummary{known: true, n: 3, top: "big"}},
		{"memory not read: the first", []event.ComputeApp{on("first", tuitest.Bad(event.CellNotSupported, "[Not Supported]")), on("second", tuitest.Bad(event.CellNA, "[N/A]"))},
			procSummary{known: true, n: 2, top: "first"}},
		{"a read value beats none", []event.ComputeApp{on("unread", tuitest.Bad(event.CellNA, "[N/A]")), on("zero", tuitest.OK(0))}, procSummary{known: true, n: 2, top: "zero"}},
		{"a path: its last element", []event.ComputeApp{on("/opt/conda/bin/python3.12", tuitest.OK(1))}, procSummary{known: true, n: 1, top: "python3.12"}},
		{"long: cut", []event.ComputeApp{on("a-very-long-process-name", tuitest.OK(1))}, procSummary{known: true, n: 1, top: "a-very-long-pro"}},
		{"escapes removed", []event.ComputeApp{on("evil\x1b]0;pwned\x07\x1b[31m", tuitest.OK(1))}, procSummary{known: true, n: 1, top: "evil"}},
		{"name not read: the count", []event.ComputeApp{{Name: event.Text{S: "[N/A]", Status: event.CellNA}, UsedMiB: tuitest.OK(1), BusID: tuitest.Txt("00000000:48:00.0")}}, procSummary{known: true, n: 1}},
	} {
		got := summarizeProcs(c.apps, &g)
		if got != c.want && !(c.name == "escapes removed" && strings.HasPrefix(got.top, "evil") && !strings.ContainsAny(got.top, "\x1b\x07")) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestProcsCells(t *testing.T) {
	g := tuitest.H200(0)
	for _, c := range []struct {
		ps          procSummary
		used        event.Reading
		full, short string
		tn          style.Token
	}{
		{procSummary{}, tuitest.OK(100), "-", "-", style.Dim},
		{procSummary{known: true}, tuitest.OK(100), "0", "0", style.Text},
		{procSummary{known: true}, tuitest.OK(1023), "0", "0", style.Text},
		{procSummary{known: true}, tuitest.OK(1536), "0, 1.5G held", "0 1.5G", style.Warn},
		{procSummary{known: true}, tuitest.OK(143000), "0, 140G held", "0 140G", style.Warn},
		{procSummary{known: true}, tuitest.Bad(event.CellNA, "[N/A]"), "0", "0", style.Text},
		{procSummary{known: true, n: 12, top: "python3"}, tuitest.OK(143000), "12 python3", "12", style.Text},
		{procSummary{known: true, n: 1}, tuitest.OK(1), "1", "1", style.Text},
	} {
		g.MemUsedMiB = c.used
		full, short := procsCells(c.ps, &g)
		if full.text != c.full || short.text != c.short || full.tone != c.tn || short.tone != c.tn {
			t.Errorf("%+v used %v: %q/%q (tone %d), want %q/%q (tone %d)", c.ps, c.used, full.text, short.text, full.tone, c.full, c.short, c.tn)
		}
	}
}
