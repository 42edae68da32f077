package gpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func okR(v float64) event.Reading                        { return event.Reading{Value: v} }
func tokR(st event.CellStatus, raw string) event.Reading { return event.Reading{Status: st, Raw: raw} }
func okT(s string) event.Text                            { return event.Text{S: s} }

var (
	absentT = event.Text{Status: event.CellAbsent}
	absentR = event.Reading{Status: event.CellAbsent}
)

// app builds the App a full AppFields row gives.
func app(pid int, name string, mib float64, bus, uuid string) event.ComputeApp {
	return event.ComputeApp{PID: pid, Name: okT(name), UsedMiB: okR(mib), BusID: okT(bus), UUID: okT(uuid)}
}

func TestParseComputeApps(t *testing.T) {
	const (
		bus0  = "00000000:18:00.0"
		bus1  = "00000000:2A:00.0"
		uuid0 = "GPU-8f6c1a2e-0000-0000-0000-000000000000"
		uuid1 = "GPU-8f6c1a2e-0000-0000-0000-000000000001"
	)
	af := AppFields()
	notSup := event.ComputeApp{PIDStatus: event.CellNotSupported, Name: okT("python3"), UsedMiB: tokR(event.CellNotSupported, "[Not Supported]"), BusID: okT(bus0), UUID: okT(uuid0)}
	for _, tc := range []struct {
		name   string
		in     string
		fields []string
		want   []event.ComputeApp
		// Exactly one of these is set for an error: the line of a
		// *RowError, the class of a *FailureError, or a field-list error.
		errLine   int
		failClass event.GPUFailureClass
		fieldErr  bool
	}{
		{name: "empty", in: "", fields: af},
		{name: "empty without fields", in: ""},
		{name: "blank lines", in: "\n  \n\r\n", fields: af},
		{name: "header only (idle capture)", in: "timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n\n"},
		{name: "no running processes", in: "No running processes found\n", fields: af},
		{name: "no running processes with dot", in: "No running processes found.\n", fields: af},
		{
			name:   "noheader nounits",
			in:     "4127, sglang::scheduler_TP0, 126384, " + bus0 + ", " + uuid0 + "\n4127, sglang::scheduler_TP1, 126037, " + bus1 + ", " + uuid1 + "\n",
			fields: af,
			want:   []event.ComputeApp{app(4127, "sglang::scheduler_TP0", 126384, bus0, uuid0), app(4127, "sglang::scheduler_TP1", 126037, bus1, uuid1)},
		},
		{
			name:   "noheader with units",
			in:     "4127, /usr/bin/python3, 2296 MiB, " + bus0 + ", " + uuid0 + "\n",
			fields: af,
			want:   []event.ComputeApp{app(4127, "/usr/bin/python3", 2296, bus0, uuid0)},
		},
		{
			name:   "field list with aliases and units in names",
			in:     "4127, python3, 12.5 MiB\n",
			fields: []string{"pid", "name", "used_gpu_memory [MiB]"},
			want:   []event.ComputeApp{{PID: 4127, Name: okT("python3"), UsedMiB: okR(12.5), BusID: absentT, UUID: absentT}},
		},
		{
			name: "header wins over fields and is mapped by name",
			in:   "gpu_uuid, used_memory [MiB], name, pid\n" + uuid0 + ", 2296 MiB, ./gpu_burn, 21198\n",
			// The field list says another order: the header is what was printed.
			fields: af,
			want:   []event.ComputeApp{{PID: 21198, Name: okT("./gpu_burn"), UsedMiB: okR(2296), BusID: absentT, UUID: okT(uuid0)}},
		},
		{
			name: "header with skipped and unknown fields",
			in: "timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory [MiB], some_future_field\n" +
				"2026/07/14 09:00:44.742, NVIDIA H100 80GB HBM3, 00000000:00:09.0, [N/A], " + uuid0 + ", 21180, /root/tools/memhog, 2296 MiB, x\n",
			want: []event.ComputeApp{app(21180, "/root/tools/memhog", 2296, "00000000:00:09.0", uuid0)},
		},
		{
			name:   "pid and memory not supported (container, old driver)",
			in:     "[Not Supported], python3, [Not Supported], " + bus0 + ", " + uuid0 + "\n",
			fields: af,
			want:   []event.ComputeApp{notSup},
		},
		{
			name:   "pid and memory N/A (WDDM)",
			in:     "[N/A], python3, [N/A], " + bus0 + ", " + uuid0 + "\n",
			fields: af,
			want:   []event.ComputeApp{{PIDStatus: event.CellNA, Name: okT("python3"), UsedMiB: tokR(event.CellNA, "[N/A]"), BusID: okT(bus0), UUID: okT(uuid0)}},
		},
		{
			name:   "other tokens and an empty memory cell",
			in:     "[Insufficient Permissions], [N/A], , [GPU is lost], [Unknown Error]\n",
			fields: af,
			want: []event.ComputeApp{{PIDStatus: event.CellOther, Name: event.Text{S: "[N/A]", Status: event.CellNA}, UsedMiB: event.Reading{Status: event.CellEmpty},
				BusID: event.Text{S: "[GPU is lost]", Status: event.CellLost}, UUID: event.Text{S: "[Unknown Error]", Status: event.CellUnknownError}}},
		},
		{
			name:   "process name containing a comma",
			in:     "77, python -c import a, b, 100 MiB, " + bus0 + ", " + uuid0 + "\n",
			fields: af,
			want:   []event.ComputeApp{app(77, "python -c import a, b", 100, bus0, uuid0)},
		},
		{
			name:   "CRLF, a BOM and a bus id that is not one",
			in:     "\xef\xbb\xbf77, python, 100, not-a-bus, " + uuid0 + "\r\n",
			fields: af,
			want:   []event.ComputeApp{{PID: 77, Name: okT("python"), UsedMiB: okR(100), BusID: event.Text{S: "not-a-bus", Status: event.CellInvalid}, UUID: okT(uuid0)}},
		},
		{
			name:   "terminal escapes are sanitised",
			in:     "77, evil\x1b]0;x\x07, 100, " + bus0 + ", GPU-\x1b[2J\n",
			fields: af,
			want:   []event.ComputeApp{{PID: 77, Name: okT("evil\uFFFD]0;x\uFFFD"), UsedMiB: okR(100), BusID: okT(bus0), UUID: event.Text{S: "GPU-\uFFFD[2J", Status: event.CellInvalid}}},
		},
		{
			name:   "only pid queried",
			in:     "12\n4194304\n",
			fields: []string{"pid"},
			want:   []event.ComputeApp{{PID: 12, Name: absentT, UsedMiB: absentR, BusID: absentT, UUID: absentT}, {PID: 4194304, Name: absentT, UsedMiB: absentR, BusID: absentT, UUID: absentT}},
		},

		// Whole-command failures, wherever they are.
		{name: "gpu lost", in: "Unable to determine the device handle for GPU 0000:01:00.0: GPU is lost.  Reboot the system to recover this GPU\n", fields: af, failClass: event.GPUFailLost},
		{name: "nvml mismatch", in: "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n", fields: af, failClass: event.GPUFailDriverLibraryMismatch},
		{name: "no devices", in: "No devices were found\n", fields: af, failClass: event.GPUFailNoDevices},
		{name: "driver not loaded", in: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n", failClass: event.GPUFailDriverNotLoaded},
		{name: "failure after a row", in: "77, python, 100, " + bus0 + ", " + uuid0 + "\nFailed to initialize NVML: Unknown Error\n", fields: af, failClass: event.GPUFailNVMLInitUnknown},

		// Garbled rows: an error naming the line, never a guess.
		{name: "pid not a number", in: "77, python, 100, a, b\nabc, python, 100, a, b\n", fields: af, errLine: 2},
		{name: "pid zero", in: "0, python, 100, a, b\n", fields: af, errLine: 1},
		{name: "pid negative", in: "-5, python, 100, a, b\n", fields: af, errLine: 1},
		{name: "pid empty", in: ", python, 100, a, b\n", fields: af, errLine: 1},
		{name: "pid too large", in: "99999999999, python, 100, a, b\n", fields: af, errLine: 1},
		{name: "pid with unit", in: "77 MiB, python, 100, a, b\n", fields: af, errLine: 1},
		{name: "memory in another unit", in: "77, python, 100 KiB, a, b\n", fields: af, errLine: 1},
		{name: "memory negative", in: "77, python, -100, a, b\n", fields: af, errLine: 1},
		{name: "memory not a number", in: "\n77, python, lots, a, b\n", fields: af, errLine: 2},
		{name: "too few cells", in: "77, python, 100, a\n", fields: af, errLine: 1},
		{name: "too many cells and no name column", in: "77, 100, 5\n", fields: []string{"pid", "used_memory"}, errLine: 1},
		{name: "headerless row without fields", in: "77, python, 100, a, b\n", errLine: 1},
		{name: "row of another header's width", in: "pid, used_memory [MiB]\n77, python, 100\n", fields: af, errLine: 2},
		{name: "header naming a field twice", in: "pid, used_memory [MiB], used_gpu_memory [MiB]\n", errLine: 1},

		// Field lists the caller got wrong.
		{name: "unknown field", in: "", fields: []string{"pid", "used_mem"}, fieldErr: true},
		{name: "a field under two names", in: "", fields: []string{"pid", "used_memory", "used_gpu_memory"}, fieldErr: true},
		{name: "only skipped fields are fine", in: "2026/01/01 00:00:00.000\n", fields: []string{"timestamp"}, want: []event.ComputeApp{absentApp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseComputeApps([]byte(tc.in), tc.fields)
			var re *RowError
			var fe *FailureError
			switch {
			case tc.errLine > 0:
				if !errors.As(err, &re) || re.Line != tc.errLine {
					t.Fatalf("error %v, want a RowError on line %d", err, tc.errLine)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("line %d", tc.errLine)) {
					t.Errorf("message %q does not name the line", err)
				}
			case tc.failClass != "":
				if !errors.As(err, &fe) || fe.Failure.Class != tc.failClass || fe.Err != nil {
					t.Fatalf("error %v, want a FailureError of class %s", err, tc.failClass)
				}
			case tc.fieldErr:
				if err == nil || errors.As(err, &re) || errors.As(err, &fe) {
					t.Fatalf("error %v, want a field-list error", err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("apps\n got %+v\nwant %+v", got, tc.want)
				}
				return
			}
			if got != nil {
				t.Errorf("apps %+v returned with the error", got)
			}
		})
	}
}

func TestParseComputeAppsFailureDetails(t *testing.T) {
	_, err := ParseComputeApps([]byte("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n"), AppFields())
	var fe *FailureError
	if !errors.As(err, &fe) || fe.Failure.NVMLVersion != "570.124" || !strings.Contains(err.Error(), "driver-library-mismatch") {
		t.Errorf("mismatch: %v %+v", err, fe)
	}
	_, err = ParseComputeApps([]byte("Unable to determine the device handle for GPU 0000:01:00.0: GPU is lost.  Reboot the system to recover this GPU\n"), nil)
	if !errors.As(err, &fe) || !fe.Failure.NeedsReboot || fe.Failure.BusID != "0000:01:00.0" || errors.Unwrap(err) != nil {
		t.Errorf("gpu lost: %v %+v", err, fe)
	}
}

// payload returns a fixture's text after its "# source:" line.
func payload(in []byte) []byte {
	return []byte(strings.Join(payloadLines(in), "\n") + "\n")
}

// appValue returns an App field under a MANIFEST key, in the manifest's
// terms: a number when valid, else the literal token.
func appValue(t *testing.T, a event.ComputeApp, key string) any {
	t.Helper()
	mem := func(r event.Reading) any {
		if r.Valid() {
			return r.Value
		}
		return r.Raw
	}
	switch key {
	case "pid":
		if a.PIDStatus == event.CellOK {
			return float64(a.PID)
		}
		return a.PIDStatus
	case "process_name":
		return a.Name.S
	case "used_gpu_memory_mib", "used_memory":
		return mem(a.UsedMiB)
	case "gpu_bus_id":
		return a.BusID.S
	case "gpu_uuid":
		return a.UUID.S
	}
	t.Fatalf("expect key %q is not an App field", key)
	return nil
}

// TestComputeAppsManifest asserts every expected value MANIFEST.json gives
// for the two --query-compute-apps fixtures. testdata/MANIFEST.json is a
// copy of shared/fixtures/MANIFEST.json, these entries included.
func TestComputeAppsManifest(t *testing.T) {
	b, err := os.ReadFile("testdata/MANIFEST.json")
	if err != nil {
		t.Fatal(err)
	}
	var all []manifestEntry
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	var entries []manifestEntry
	for _, e := range all {
		if strings.Contains(e.File, "compute-apps") {
			entries = append(entries, e)
		}
	}
	if len(entries) != 2 {
		t.Fatalf("%d compute-apps fixtures in the manifest, want 2", len(entries))
	}
	handled := []string{"header", "query", "query_fields", "processes", "rows", "note"}
	for _, e := range entries {
		t.Run(filepath.Base(e.File), func(t *testing.T) {
			if _, ok := notCovered[e.File]; !ok {
				t.Errorf("%s is not in fixtures_test.go's notCovered: TestManifestFixtures would read it as --query-gpu", e.File)
			}
			for k := range e.Expect {
				if !slices.Contains(handled, k) {
					t.Errorf("expect key %q is not asserted by this test", k)
				}
			}
			in := readFixture(t, e.File)
			if !strings.HasPrefix(string(in), "# source: ") {
				t.Error("fixture lost its # source: line")
			}
			body := payload(in)
			if q, ok := e.Expect["query"]; ok && q != "compute-apps" {
				t.Fatalf("query %v", q)
			}
			var fields []string
			if qf, ok := e.Expect["query_fields"].([]any); ok {
				for _, f := range qf {
					fields = append(fields, f.(string))
				}
			}
			header, ok := e.Expect["header"].(bool)
			if !ok {
				t.Fatal("expect.header missing")
			}
			first := payloadLines(in)[0]
			if _, isHeader := appHeader([]byte(first)); isHeader != header {
				t.Errorf("first line %q read as header: %v, want %v", first, isHeader, header)
			}
			var want []any
			for _, k := range []string{"processes", "rows"} {
				if w, ok := e.Expect[k].([]any); ok {
					want = append(want, w...)
				}
			}
			if len(want) == 0 {
				t.Fatal("no expected rows")
			}

			got, err := ParseComputeApps(body, fields)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d apps, want %d", len(got), len(want))
			}
			checked := 0
			for i, w := range want {
				for k, wv := range w.(map[string]any) {
					gv := appValue(t, got[i], k)
					if st, isStatus := gv.(event.CellStatus); isStatus {
						// A pid token: the row is kept, its pid is 0 and
						// its status is the token's.
						ws, _ := token([]byte(wv.(string)))
						if ws == event.CellOK || st != ws || got[i].PID != 0 {
							t.Errorf("row %d %s: PID %d status %v, want the token %q", i, k, got[i].PID, st, wv)
						}
					} else if gv != wv {
						t.Errorf("row %d %s = %#v, want %#v", i, k, gv, wv)
					}
					checked++
				}
			}
			if checked < 6 {
				t.Errorf("only %d values checked", checked)
			}

			if header {
				// The header wins over any field list...
				again, err := ParseComputeApps(body, AppFields())
				if err != nil || !reflect.DeepEqual(again, got) {
					t.Errorf("with AppFields: %v %+v", err, again)
				}
			} else {
				// ...and headerless rows need one.
				var re *RowError
				if _, err := ParseComputeApps(body, nil); !errors.As(err, &re) || re.Line != 1 {
					t.Errorf("headerless without fields: %v", err)
				}
			}
		})
	}
}

// TestCaptureComputeApps reads the --query-compute-apps sections of every
// capture (units, header, idle = header only) and checks that each process
// sits on a GPU of the capture's own --query-gpu output.
func TestCaptureComputeApps(t *testing.T) {
	type proc struct {
		pid  int
		name string
		mib  float64
	}
	wantLoad := map[string][]proc{
		"linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt": {{5268, "ffmpeg", 370}, {5267, "ffmpeg", 230}},
		"linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt": {{2165, "/usr/bin/kwin_wayland", 25}, {5022, "ffmpeg", 503}, {5021, "ffmpeg", 360}},
		"linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt":         {{11327, "/root/tools/memhog", 2566}, {11328, "/root/tools/memhog", 1542}, {11345, "./gpu_burn", 15690}},
		"linux-x86_64__nvidia-h100-mig__590.48.01.txt":               {{21180, "/root/tools/memhog", 2296}, {21181, "/root/tools/memhog", 1272}, {21198, "./gpu_burn", 7484}},
		"linux-x86_64__nvidia-h200__590.48.01.txt":                   {{10291, "/root/tools/memhog", 2566}, {10293, "/root/tools/memhog", 1542}, {10309, "./gpu_burn", 28234}},
	}
	wantIdle := map[string]int{"linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt": 1}
	files, err := filepath.Glob("testdata/nvidia-smi/captures/*.txt")
	if err != nil || len(files) != len(wantLoad) {
		t.Fatalf("captures: %v %v", files, err)
	}
	for _, f := range files {
		base := filepath.Base(f)
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		header, rows := csvOf(captureSection(t, in, "load :: query-gpu"))
		busCol := slices.Index(strings.Split(header, ", "), "pci.bus_id")
		if busCol < 0 {
			t.Fatalf("%s: no pci.bus_id column", base)
		}
		var buses []string
		for _, r := range rows {
			buses = append(buses, strings.Split(r, ", ")[busCol])
		}

		idle, err := ParseComputeApps(captureSection(t, in, "idle :: query-compute-apps"), nil)
		if err != nil || len(idle) != wantIdle[base] {
			t.Errorf("%s idle: %d apps, %v", base, len(idle), err)
		}
		load, err := ParseComputeApps(captureSection(t, in, "load :: query-compute-apps"), nil)
		if err != nil {
			t.Fatalf("%s load: %v", base, err)
		}
		want := wantLoad[base]
		if len(load) != len(want) {
			t.Fatalf("%s load: %d apps, want %d", base, len(load), len(want))
		}
		for i, a := range load {
			w := want[i]
			if a.PID != w.pid || a.PIDStatus != event.CellOK || a.Name != okT(w.name) || a.UsedMiB != okR(w.mib) {
				t.Errorf("%s app %d: %+v, want %+v", base, i, a, w)
			}
			if a.UUID.Status != event.CellOK || !strings.HasPrefix(a.UUID.S, "GPU-") {
				t.Errorf("%s app %d: uuid %+v", base, i, a.UUID)
			}
			if !slices.ContainsFunc(buses, func(b string) bool { return SameBus(b, a.BusID.S) }) {
				t.Errorf("%s app %d: bus %q is none of the GPUs' %q", base, i, a.BusID.S, buses)
			}
		}
	}
}

// TestCaptureHelpQueryComputeApps checks appFieldNames against
// --help-query-compute-apps of drivers 590 and 595: the same names, and
// every AppFields name is offered.
func TestCaptureHelpQueryComputeApps(t *testing.T) {
	files, _ := filepath.Glob("testdata/nvidia-smi/captures/*.txt")
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		set, err := ParseHelpQueryGPU(captureSection(t, in, "capabilities :: help-query-compute-apps"))
		if err != nil {
			t.Fatal(err)
		}
		for name := range set {
			if _, ok := appFieldNames[name]; !ok {
				t.Errorf("%s offers %q, which appFieldNames lacks", filepath.Base(f), name)
			}
		}
		for name := range appFieldNames {
			if !set[name] {
				t.Errorf("%s does not offer %q", filepath.Base(f), name)
			}
		}
		for _, name := range AppFields() {
			if !set[name] {
				t.Errorf("%s does not offer AppFields' %q", filepath.Base(f), name)
			}
		}
	}
}

func TestSameBus(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"00000000:18:00.0", "00000000:18:00.0", true},
		{"00000000:18:00.0", "0000:18:00.0", true},  // failure message vs query output
		{"00000000:0B:00.0", "0000:0b:00.0", true},  // case
		{"00000000:18:00.0", "18:00.0", true},       // lspci, no domain
		{"0:18:00.0", " 00000000:18:00.0 ", true},   // padding, spaces
		{"00000001:18:00.0", "0000:18:00.0", false}, // another domain
		{"00000000:18:00.0", "00000000:19:00.0", false},
		{"00000000:18:00.0", "00000000:18:01.0", false},
		{"00000000:18:00.0", "00000000:18:00.1", false},
		{"[N/A]", "[N/A]", false},
		{"", "", false},
		{"00000000:18:00", "00000000:18:00", false},  // no function
		{"000000000:18:00.0", "0000:18:00.0", false}, // domain over 8 digits
		{"00000000:18:00.0:1", "00000000:18:00.0", false},
		{"0000:xx:00.0", "0000:xx:00.0", false},
	} {
		if got := SameBus(tc.a, tc.b); got != tc.want {
			t.Errorf("SameBus(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := SameBus(tc.b, tc.a); got != tc.want {
			t.Errorf("SameBus(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestParseGPUMemory(t *testing.T) {
	gs, err := parseGPUMemory([]byte("1, 00000000:2A:00.0, 126037, 143771\n0, 00000000:18:00.0, 0, 143771\n2, 00000000:3A:00.0, [GPU is lost], [GPU is lost]\n"))
	if err != nil {
		t.Fatal(err)
	}
	lost := tokR(event.CellLost, "[GPU is lost]")
	want := []GPUMemory{
		{Index: 0, BusID: "00000000:18:00.0", UsedMiB: okR(0), TotalMiB: okR(143771)},
		{Index: 1, BusID: "00000000:2A:00.0", UsedMiB: okR(126037), TotalMiB: okR(143771)},
		{Index: 2, BusID: "00000000:3A:00.0", UsedMiB: lost, TotalMiB: lost},
	}
	if !reflect.DeepEqual(gs, want) {
		t.Errorf("got  %+v\nwant %+v", gs, want)
	}
	if gs, err := parseGPUMemory([]byte("\n")); err != nil || gs != nil {
		t.Errorf("empty: %v %v", gs, err)
	}
	for in, line := range map[string]int{
		"0, 00000000:18:00.0, 10, 20\nx, 00000000:18:00.0, 10, 20\n": 2,
		"0, 00000000:18:00.0, 10 KiB, 20\n":                          1,
		"0, 00000000:18:00.0, -10, 20\n":                             1,
		"0, 00000000:18:00.0, 10\n":                                  1,
	} {
		var re *RowError
		if gs, err := parseGPUMemory([]byte(in)); !errors.As(err, &re) || re.Line != line || gs != nil {
			t.Errorf("%q: %v, want a RowError on line %d", in, err, line)
		}
	}
	var fe *FailureError
	if _, err := parseGPUMemory([]byte("No devices were found\n")); !errors.As(err, &fe) || fe.Failure.Class != event.GPUFailNoDevices {
		t.Errorf("failure: %v", err)
	}
}

// FuzzParseComputeApps: no panic; an App with PIDStatus OK has a real pid
// and one without has pid 0; a valid memory reading is a non-negative
// number; text is printable; on error nothing is returned.
func FuzzParseComputeApps(f *testing.F) {
	for _, name := range []string{"csv-compute-apps-mig-h100.txt", "csv-compute-apps-not-supported.txt"} {
		if b, err := os.ReadFile(filepath.Join("testdata/nvidia-smi/cases", name)); err == nil {
			f.Add(b, "gpu_uuid,pid,used_memory")
		}
	}
	f.Add([]byte("4127, sglang::scheduler_TP0, 126384, 00000000:18:00.0, GPU-x\n"), strings.Join(AppFields(), ","))
	f.Add([]byte("[Not Supported], a, b, [Not Supported], [N/A]\n77, x, y, z, 1 MiB, 00000000:18:00.0, u\r\n"), strings.Join(AppFields(), ","))
	f.Add([]byte("pid, used_memory [MiB]\n0, -1\n99999999999, 1e3\n"), "")
	f.Add([]byte("No running processes found\nFailed to initialize NVML: Driver/library version mismatch\nNVML library version: 1\n"), "pid")
	f.Add([]byte("\xef\xbb\xbf, ,\n\x00\x1b[0m, NaN, Inf\n"), "name,used_gpu_memory,pid")
	f.Fuzz(func(t *testing.T, in []byte, fields string) {
		var fl []string
		if fields != "" {
			fl = strings.Split(fields, ",")
		}
		apps, err := ParseComputeApps(in, fl)
		if err != nil {
			if apps != nil {
				t.Fatalf("%d apps with error %v", len(apps), err)
			}
			var re *RowError
			if errors.As(err, &re) && (re.Line < 1 || !printable(re.Text)) {
				t.Fatalf("row error %+v", re)
			}
			var fe *FailureError
			if errors.As(err, &fe) && (fe.Failure.Class == "" || !printable(fe.Failure.Line)) {
				t.Fatalf("failure %+v", fe)
			}
			return
		}
		for _, a := range apps {
			if (a.PIDStatus == event.CellOK) != (a.PID > 0) || a.PID < 0 {
				t.Fatalf("pid %d with status %v", a.PID, a.PIDStatus)
			}
			if a.UsedMiB.Valid() && (a.UsedMiB.Value < 0 || math.IsNaN(a.UsedMiB.Value) || math.IsInf(a.UsedMiB.Value, 0)) {
				t.Fatalf("memory %+v", a.UsedMiB)
			}
			checkReading(t, "used memory", a.UsedMiB)
			for _, x := range []event.Text{a.Name, a.BusID, a.UUID} {
				if !printable(x.S) || x.Status == event.CellOK && x.S == "" {
					t.Fatalf("text %+v", x)
				}
			}
		}
	})
}

// FuzzSameBus: no panic, symmetric, and a bus id SameBus accepts matches
// itself.
func FuzzSameBus(f *testing.F) {
	f.Add("00000000:18:00.0", "0000:18:00.0")
	f.Add("18:00.0", "[N/A]")
	f.Fuzz(func(t *testing.T, a, b string) {
		if SameBus(a, b) != SameBus(b, a) {
			t.Fatalf("not symmetric: %q %q", a, b)
		}
		if SameBus(a, b) && !SameBus(a, a) {
			t.Fatalf("%q matches %q but not itself", a, b)
		}
	})
}

// BenchmarkParseComputeApps parses the apps of an 8-GPU server (one row per
// GPU), what the cockpit polls after a kill.
func BenchmarkParseComputeApps(b *testing.B) {
	var sb strings.Builder
	for i := range 8 {
		fmt.Fprintf(&sb, "4127, sglang::scheduler_TP%d, %d, 00000000:%02X:00.0, GPU-8f6c1a2e-0000-0000-0000-00000000000%d\n", i, 126000+i*37, 0x18+i*0x10, i)
	}
	out := []byte(sb.String())
	fields := AppFields()
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		apps, err := ParseComputeApps(out, fields)
		if err != nil || len(apps) != 8 {
			b.Fatal(len(apps), err)
		}
	}
}
