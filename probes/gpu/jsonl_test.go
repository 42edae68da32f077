package gpu

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func TestWriteJSONLHeaderWithUnits(t *testing.T) {
	in := "$ nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,power.draw,temperature.gpu,clocks.sm,fan.speed,clocks_event_reasons_counters.sw_power_cap,serial,inforom.oem --format=csv\n" +
		"index, name, utilization.gpu [%], memory.used [MiB], power.draw [W], temperature.gpu, clocks.sm [MHz], fan.speed [%], clocks_event_reasons_counters.sw_power_cap [us], serial, inforom.oem\n" +
		"0, NVIDIA H100 80GB HBM3, 100 %, 19818 MiB, 631.95 W, 59, 1980 MHz, [N/A], 0 us, 0000000000000, 2.10\n" +
		"1, NVIDIA H100 80GB HBM3, [N/A], 11125 MiB, [Unknown Error], 53, 1980 MHz, ERR!, 12 us, [N/A], 2.1\n"
	recs, err := jsonl(t, []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"type": "gpu", "index": 0.0, "name": "NVIDIA H100 80GB HBM3", "util_gpu_pct": 100.0, "mem_used_mib": 19818.0,
			"power_draw_w": 631.95, "temp_c": 59.0, "sm_clock_mhz": 1980.0, "fan_speed_pct": "[N/A]",
			"clocks_event_reasons_counters.sw_power_cap": 0.0, "serial": "0000000000000", "inforom.oem": "2.10"},
		{"type": "gpu", "index": 1.0, "util_gpu_pct": "[N/A]", "power_draw_w": "[Unknown Error]", "fan_speed_pct": "ERR!",
			"clocks_event_reasons_counters.sw_power_cap": 12.0, "serial": "[N/A]", "inforom.oem": "2.1"},
	}
	if len(recs) != 2 {
		t.Fatalf("records: %v", recs)
	}
	for i := range want {
		assertRecord(t, "row", recs[i], want[i])
		if _, ok := recs[i]["pci_bus_id"]; ok {
			t.Error("pci_bus_id present although not in the input")
		}
	}
	if len(recs[0]) != 12 {
		t.Errorf("keys: %v", recs[0])
	}
}

func TestWriteJSONLKeyOrder(t *testing.T) {
	var out bytes.Buffer
	fields := []string{"pstate", "fan.speed", "temperature.memory", "index", "mig.mode.current", "name"}
	if err := WriteJSONL(&out, strings.NewReader("P0, 30, 48, 2, Disabled, NVIDIA H200\n"), fields); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"gpu","index":2,"name":"NVIDIA H200","pstate":"P0","fan_speed_pct":30,"mig_mode":"Disabled","temperature.memory":48}` + "\n"
	if out.String() != want {
		t.Errorf("got  %s want %s", out.String(), want)
	}
}

func TestWriteJSONLGarbledRowsKeepGoodOnes(t *testing.T) {
	in := "# source: test\n" +
		"index, name, utilization.gpu [%]\n" +
		"0, NVIDIA H200, 10 %\n" +
		"1, NVIDIA H200\n" + // line 4: too few cells
		"2, NVIDIA H200, 12 %\n" +
		"x, NVIDIA H200, 13 %\n" + // line 6: bad index
		"\n" +
		"3, NVIDIA H200, abc\n" // a bad value is not a bad row
	recs, err := jsonl(t, []byte(in), nil)
	var ge *GarbledError
	if !errors.As(err, &ge) {
		t.Fatalf("err = %v, want *GarbledError", err)
	}
	if ge.Count != 2 || len(ge.Rows) != 2 || ge.Rows[0].Line != 4 || ge.Rows[1].Line != 6 {
		t.Errorf("garbled = %+v", ge)
	}
	if msg := err.Error(); !strings.Contains(msg, "lines 4, 6") || !strings.Contains(msg, "2 cells, want 3") {
		t.Errorf("message: %s", msg)
	}
	if len(recs) != 3 || recs[0]["index"] != 0.0 || recs[1]["index"] != 2.0 || recs[2]["util_gpu_pct"] != "abc" {
		t.Errorf("records: %v", recs)
	}
}

func TestWriteJSONLHeaderlessNeedsFields(t *testing.T) {
	recs, err := jsonl(t, []byte("41, 6, 13\n"), nil)
	var ge *GarbledError
	if !errors.As(err, &ge) || ge.Count != 1 || !strings.Contains(err.Error(), "no field list") || len(recs) != 0 {
		t.Errorf("recs %v err %v", recs, err)
	}
}

func TestWriteJSONLFailures(t *testing.T) {
	in := "Failed to initialize NVML: Driver/library version mismatch\n" + // pending until the next line
		"Unable to determine the device handle for GPU 0000:0A:00.0: GPU is lost.  Reboot the system to recover this GPU\n" +
		"Failed to initialize NVML: Driver/library version mismatch\n"
	recs, err := jsonl(t, []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("records: %v", recs)
	}
	assertRecord(t, "0", recs[0], map[string]any{"failure_class": "driver-library-mismatch", "pci_bus_id": nil, "line": 1.0})
	assertRecord(t, "1", recs[1], map[string]any{"failure_class": "gpu-lost", "pci_bus_id": "0000:0A:00.0", "needs_reboot": true, "line": 2.0})
	assertRecord(t, "2", recs[2], map[string]any{"failure_class": "driver-library-mismatch", "line": 3.0})
	if _, ok := recs[0]["nvml_library_version"]; ok {
		t.Error("version without a version line")
	}
}

func TestWriteJSONLEscapes(t *testing.T) {
	var out bytes.Buffer
	err := WriteJSONL(&out, strings.NewReader("0, a\"b\\c\x1b[2J\x01\n"), []string{"index", "name"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\x01") || !strings.Contains(out.String(), `a\"b\\c`) {
		t.Errorf("output %q", out.String())
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m["name"] != "a\"b\\c\ufffd[2J\ufffd" {
		t.Errorf("decoded %#v, %v", m, err)
	}
}

func TestHeaderDetection(t *testing.T) {
	for line, want := range map[string]bool{
		"index, name, pci.bus_id":                true,
		"utilization.gpu [%], memory.used [MiB]": true,
		"index":                                  true,
		"temperature.gpu":                        true,
		"Enabled, Disabled":                      false,
		"P0":                                     false,
		"41, 6, 13":                              false,
		"NVIDIA H200, 5":                         false,
		"name [":                                 false,
		"utilization.gpu [%":                     false,
		// Names must look like fields, most of them, and one must be known.
		"compatible.":                        false,
		"occurred.":                          false,
		"timestamp, driver_version":          false,
		"Index, Name":                        false,
		"index, Enabled, Disabled":           false,
		"index, name, Foo":                   true,
		"pci.baseClass, pci.subClass, index": true,
		"vgpu_driver_capability.heterogenous_multivGPU, name": true,
		"index, a..b, c.": false,
	} {
		if _, got := headerFields([]byte(line)); got != want {
			t.Errorf("headerFields(%q) = %v, want %v", line, got, want)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriteJSONLWriteError(t *testing.T) {
	rows := strings.Repeat("0, NVIDIA H200\n", 10000)
	if err := WriteJSONL(failingWriter{}, strings.NewReader(rows), []string{"index", "name"}); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("err = %v", err)
	}
}

func TestWriteJSONLLongLine(t *testing.T) {
	in := "index, name\n0, " + strings.Repeat("x", maxLineLen+10) + "\n1, ok\n2, NVIDIA H200"
	recs, err := jsonl(t, []byte(in), nil)
	var ge *GarbledError
	if !errors.As(err, &ge) || ge.Rows[0].Line != 2 || len(recs) != 2 || recs[1]["name"] != "NVIDIA H200" {
		t.Errorf("recs %v err %v", recs, err)
	}
}

// TestWriteJSONLRefusesComputeApps: --query-compute-apps output (one row
// per process, with the GPU's name and bus id on each) is not read as GPU
// rows, which would count a GPU per process: it is refused, saying what
// it is, and no record is written.
func TestWriteJSONLRefusesComputeApps(t *testing.T) {
	in, err := os.ReadFile("testdata/nvidia-smi/cases/csv-compute-apps-mig-h100.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = WriteJSONL(&out, bytes.NewReader(in), nil)
	if err == nil || !strings.Contains(err.Error(), "--query-compute-apps output (one row per process") {
		t.Fatalf("err = %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("wrote records:\n%s", out.String())
	}
	// A --query-gpu header after it is read as usual.
	in = append(in, "index, name, memory.used [MiB]\n0, NVIDIA H100 80GB HBM3, 2296 MiB\n"...)
	out.Reset()
	err = WriteJSONL(&out, bytes.NewReader(in), nil)
	var garbled *GarbledError
	if !errors.As(err, &garbled) || garbled.Count != 4 || !strings.Contains(out.String(), `"index":0`) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("then --query-gpu: err %v, out %q", err, out.String())
	}
}

// TestWriteJSONLRefusesComputeAppsFields: headerless --query-compute-apps
// rows read with their --fields are refused the same way.
func TestWriteJSONLRefusesComputeAppsFields(t *testing.T) {
	var out bytes.Buffer
	err := WriteJSONL(&out, strings.NewReader("GPU-1, 38310, 4245\n"), []string{"gpu_uuid", "pid", "used_memory"})
	if !errors.Is(err, ErrNotQueryGPU) || !strings.Contains(err.Error(), "--query-compute-apps fields") || out.Len() != 0 {
		t.Errorf("err %v, out %q", err, out.String())
	}
}
