package agent

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func ok(v float64) event.Reading { return event.Reading{Value: v} }

// h200 returns GPU i of a busy 8×H200 host as NVML reads it.
func h200(i int) event.GPU {
	absent := event.Reading{Status: event.CellAbsent}
	return event.GPU{
		Index:            i,
		Name:             event.Text{S: "NVIDIA H200"},
		BusID:            event.Text{S: fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10)},
		UUID:             event.Text{S: fmt.Sprintf("GPU-5c2d0b8e-7e1a-4c1f-9b3d-6d2a1f0e%04x", i)},
		UtilGPUPct:       ok(float64(90 + i)),
		UtilMemPct:       ok(float64(40 + i)),
		MemUsedMiB:       ok(130542 + float64(i)),
		MemTotalMiB:      ok(143771),
		PowerDrawW:       ok(612.35 + float64(i)),
		PowerLimitW:      ok(700),
		TempC:            ok(float64(61 + i)),
		SMClockMHz:       ok(1980),
		MemClockMHz:      ok(3201),
		SMClockMax:       ok(1980),
		FanPct:           event.Reading{Status: event.CellNA, Raw: "[N/A]"},
		PState:           event.Text{S: "P0"},
		PCIeGenCurrent:   ok(5),
		PCIeGenMax:       ok(5),
		PCIeWidthCurrent: ok(16),
		PCIeWidthMax:     ok(16),
		ClockEvents:      event.ClockEvents{Mask: event.ReasonSWPowerCap},
		Persistence:      event.Text{S: "Enabled"},
		ECCMode:          event.Text{S: "Enabled"},
		MIGMode:          event.Text{S: "Disabled"},
		PCIeRxKBs:        absent,
		PCIeTxKBs:        absent,
	}
}

// sample8 is an 8-GPU sample with one process per GPU.
func sample8() event.GPUSample {
	s := event.GPUSample{At: time.Unix(1764400000, 123456789), Apps: []event.ComputeApp{}}
	for i := range 8 {
		g := h200(i)
		s.GPUs = append(s.GPUs, g)
		s.Apps = append(s.Apps, event.ComputeApp{
			PID: 41000 + i, Name: event.Text{S: "python3"}, UsedMiB: ok(130000),
			BusID: g.BusID, UUID: g.UUID,
		})
	}
	return s
}

func decodeOne(t *testing.T, line []byte) Message {
	t.Helper()
	var d Decoder
	m, err := d.Decode(line)
	if err != nil {
		t.Fatalf("Decode(%s): %v", line, err)
	}
	return m
}

func TestSampleRoundTrip(t *testing.T) {
	samples := map[string]event.GPUSample{
		"8 GPUs with apps": sample8(),
		"empty":            {},
		"empty slices":     {GPUs: []event.GPU{}, Missing: []int{}, Apps: []event.ComputeApp{}},
		"missing":          {At: time.Unix(5, 0), GPUs: []event.GPU{h200(0)}, Missing: []int{1, 7}},
		"far future":       {At: time.Date(3000, 1, 2, 3, 4, 5, 6, time.UTC)},
		"far past":         {At: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
		"epoch":            {At: time.Unix(0, 0)},
	}
	for name, s := range samples {
		t.Run(name, func(t *testing.T) {
			line := AppendSample(nil, s)
			if !strings.HasSuffix(string(line), "}\n") || strings.Count(string(line), "\n") != 1 {
				t.Fatalf("not one line: %q", line)
			}
			m := decodeOne(t, line)
			if m.Kind != KindSample || m.Type != "sample" {
				t.Fatalf("kind %v type %q", m.Kind, m.Type)
			}
			if !m.At.Equal(s.At) {
				t.Errorf("At %v, want %v", m.At, s.At)
			}
			if d := diff(s, m.Payload.(event.GPUSample)); d != "" {
				t.Errorf("round trip differs: %s\nline: %s", d, line)
			}
		})
	}
}

// TestStatusForms checks every Status in a Reading, a Text and
// ClockEvents: the wire form, and that it reads back exactly.
func TestStatusForms(t *testing.T) {
	tokens := map[event.CellStatus]string{
		event.CellNA: "[N/A]", event.CellNotSupported: "[Not Supported]", event.CellUnknownError: "[Unknown Error]",
		event.CellLost: "[GPU is lost]", event.CellErr: "ERR!", event.CellEmpty: "",
		event.CellDeprecated: "[Requested functionality has been deprecated]",
		event.CellOther:      "[Insufficient Permissions]", event.CellInvalid: "12 %%", event.CellAbsent: "",
	}
	for st := event.CellOK; st <= event.CellAbsent; st++ {
		raw := tokens[st]
		r := event.Reading{Status: st, Raw: raw}
		tx := event.Text{Status: st, S: raw}
		ce := event.ClockEvents{Status: st, Raw: raw}
		var wantR, wantT, wantC string
		switch st {
		case event.CellOK:
			r, tx, ce = ok(53.5), event.Text{S: "P0"}, event.ClockEvents{Mask: 0x44}
			wantR, wantT, wantC = `53.5`, `"P0"`, `68`
		case event.CellAbsent:
			// left out
		case event.CellInvalid:
			wantR, wantC = `"12 %%"`, `"12 %%"`
			wantT = `{"status":9,"s":"12 %%"}` // a plain string reads back as OK
		default:
			q := `"` + raw + `"`
			wantR, wantT, wantC = q, q, q
		}
		t.Run(st.String(), func(t *testing.T) {
			g := h200(0)
			g.TempC, g.PState, g.ClockEvents = r, tx, ce
			line := string(AppendSample(nil, event.GPUSample{GPUs: []event.GPU{g}}))
			for key, want := range map[string]string{"temp_c": wantR, "pstate": wantT, "clock_events": wantC} {
				got, found := valueOf(line, key)
				if want == "" {
					if found {
						t.Errorf("%s written as %s, want it left out", key, got)
					}
				} else if got != want {
					t.Errorf("%s written as %s, want %s", key, got, want)
				}
			}
			m := decodeOne(t, []byte(line))
			if d := diff(g, m.Payload.(event.GPUSample).GPUs[0]); d != "" {
				t.Errorf("round trip: %s\nline: %s", d, line)
			}
		})
	}
}

// valueOf returns the raw value of key in a one-GPU sample line.
func valueOf(line, key string) (string, bool) {
	i := strings.Index(line, `"`+key+`":`)
	if i < 0 {
		return "", false
	}
	rest := line[i+len(key)+3:]
	depth := 0
	inStr := false
	for j := 0; j < len(rest); j++ {
		c := rest[j]
		switch {
		case inStr && c == '\\':
			j++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
		case (c == '}' || c == ']') && depth > 0:
			depth--
		case (c == ',' || c == '}' || c == ']') && depth == 0:
			return rest[:j], true
		}
	}
	return rest, true
}

// TestOddValues covers the values only the object forms can carry.
func TestOddValues(t *testing.T) {
	cases := map[string]event.Reading{
		"value with token":   {Value: 5, Status: event.CellNA, Raw: "[N/A]"},
		"ok with raw":        {Value: 5, Raw: "5 W"},
		"nan":                {Value: math.NaN()},
		"inf":                {Value: math.Inf(1)},
		"-inf":               {Value: math.Inf(-1), Status: event.CellErr, Raw: "ERR!"},
		"negative zero":      {Value: math.Copysign(0, -1)},
		"neg zero token":     {Value: math.Copysign(0, -1), Status: event.CellNA, Raw: "[N/A]"},
		"status 200":         {Status: 200, Raw: "x"},
		"absent with raw":    {Status: event.CellAbsent, Raw: "[N/A]"},
		"NA without token":   {Status: event.CellNA},
		"tiny":               {Value: 5e-324},
		"huge":               {Value: math.MaxFloat64},
		"long mantissa":      {Value: 0.1 + 0.2},
		"big integer":        {Value: 1 << 60},
		"negative":           {Value: -273.15},
		"escapes in raw":     {Status: event.CellInvalid, Raw: "a\"b\\c\x1b[31m\n\t\u2028é"},
		"invalid bracketing": {Status: event.CellInvalid, Raw: "[x]"},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			g := h200(3)
			g.PowerDrawW = r
			g.Name = event.Text{S: "[N/A]"} // an OK text that looks like a token
			g.ClockEvents = event.ClockEvents{Status: event.CellNA, Raw: "[N/A]", Mask: 8}
			g.Lost = true
			s := event.GPUSample{At: time.Unix(1, 2), GPUs: []event.GPU{g}}
			line := AppendSample(nil, s)
			m := decodeOne(t, line)
			if d := diff(s, m.Payload.(event.GPUSample)); d != "" {
				t.Errorf("round trip: %s\nline: %s", d, line)
			}
		})
	}
}

func TestInvalidUTF8BecomesReplacement(t *testing.T) {
	g := h200(0)
	g.Name = event.Text{S: "NVIDIA\xff H200"}
	line := AppendSample(nil, event.GPUSample{GPUs: []event.GPU{g}})
	m := decodeOne(t, line)
	if got := m.Payload.(event.GPUSample).GPUs[0].Name; got.S != "NVIDIA\uFFFD H200" || got.Status != event.CellOK {
		t.Errorf("name %+v", got)
	}
}

func TestEventLines(t *testing.T) {
	at := time.Unix(1764400000, 5)
	cases := []struct {
		p    event.Payload
		want string
		kind Kind
	}{
		{event.Xid{Index: 2, UUID: "GPU-1", BusID: "00000000:83:00.0", Code: 79},
			`{"t":"xid","at":1764400000000000005,"index":2,"uuid":"GPU-1","pci_bus_id":"00000000:83:00.0","code":79}`, KindXid},
		{event.Xid{Index: -1, Code: math.MaxUint64},
			`{"t":"xid","at":1764400000000000005,"index":-1,"code":18446744073709551615}`, KindXid},
		{event.GPUFailure{Class: event.GPUFailLost, BusID: "0000:0B:00.0", Reason: "GPU is lost", NeedsReboot: true, NVMLVersion: "570.124", Line: "Unable to …"},
			`{"t":"failure","at":1764400000000000005,"class":"gpu-lost","pci_bus_id":"0000:0B:00.0","reason":"GPU is lost","needs_reboot":true,"nvml_version":"570.124","line":"Unable to …"}`, KindFailure},
		{event.GPUStale{LastSample: time.Unix(1764399997, 0), Missed: 3, Reason: "no sample for 3 intervals"},
			`{"t":"stale","at":1764400000000000005,"last_sample":1764399997000000000,"missed":3,"reason":"no sample for 3 intervals"}`, KindStale},
		{event.GPUStale{}, `{"t":"stale","at":1764400000000000005,"missed":0}`, KindStale},
	}
	for _, c := range cases {
		line, ok := AppendEvent(nil, event.Event{At: at, Data: c.p})
		if !ok {
			t.Fatalf("AppendEvent(%T) refused", c.p)
		}
		if string(line) != c.want+"\n" {
			t.Errorf("line\n got %s\nwant %s", line, c.want)
		}
		m := decodeOne(t, line)
		if m.Kind != c.kind || !m.At.Equal(at) {
			t.Errorf("kind %v at %v", m.Kind, m.At)
		}
		if d := diff(c.p, m.Payload); d != "" {
			t.Errorf("%T round trip: %s", c.p, d)
		}
	}
	if _, ok := AppendEvent(nil, event.Event{Data: event.GPUSource{}}); ok {
		t.Error("AppendEvent wrote a gpu.Source; the protocol does not carry it")
	}
	// A sample event without Sample.At takes the event's time.
	line, _ := AppendEvent(nil, event.Event{At: at, Data: event.GPUSample{}})
	if m := decodeOne(t, line); !m.At.Equal(at) {
		t.Errorf("sample at %v, want %v", m.At, at)
	}
}

func TestHelloAndUnavailable(t *testing.T) {
	h := Hello{V: 1, Version: "0.8.0", Driver: "550.54.15", NVML: "12.550.54.15", CUDA: 12040, GPUs: 8, Interval: time.Second}
	line := AppendHello(nil, h)
	want := `{"t":"hello","v":1,"version":"0.8.0","driver":"550.54.15","nvml":"12.550.54.15","cuda":12040,"gpus":8,"interval_ms":1000}` + "\n"
	if string(line) != want {
		t.Errorf("hello\n got %s\nwant %s", line, want)
	}
	if m := decodeOne(t, line); m.Kind != KindHello || m.Hello != h {
		t.Errorf("hello read back as %+v", m)
	}
	u := Unavailable{V: 1, Reason: "NVML init failed: ERROR_LIBRARY_NOT_FOUND", Code: 12}
	line = AppendUnavailable(nil, u)
	if string(line) != `{"t":"unavailable","v":1,"reason":"NVML init failed: ERROR_LIBRARY_NOT_FOUND","code":12}`+"\n" {
		t.Errorf("unavailable line %s", line)
	}
	if m := decodeOne(t, line); m.Kind != KindUnavailable || m.Unavailable != u {
		t.Errorf("unavailable read back as %+v", m)
	}
}

// A hello from the simulated host's fake NVML says so; a real one leaves
// the key out (older readers skip it either way).
func TestHelloSimulated(t *testing.T) {
	h := Hello{V: 1, Version: "0.8.0", GPUs: 8, Interval: time.Second, Simulated: true}
	line := AppendHello(nil, h)
	want := `{"t":"hello","v":1,"version":"0.8.0","driver":"","nvml":"","cuda":0,"gpus":8,"interval_ms":1000,"simulated":true}` + "\n"
	if string(line) != want {
		t.Errorf("hello\n got %s\nwant %s", line, want)
	}
	if m := decodeOne(t, line); m.Kind != KindHello || m.Hello != h {
		t.Errorf("hello read back as %+v", m)
	}
	if m := decodeOne(t, []byte(`{"t":"hello","v":1,"simulated":false}`)); m.Hello.Simulated {
		t.Error(`"simulated":false read as true`)
	}
	var d Decoder
	if _, err := d.Decode([]byte(`{"t":"hello","v":1,"simulated":"yes"}`)); err == nil {
		t.Error(`"simulated":"yes" accepted`)
	}
}

func TestAliveAndLaunch(t *testing.T) {
	at := time.Unix(1764400000, 123456789)
	line := AppendAlive(nil, at)
	if string(line) != `{"t":"alive","at":1764400000123456789}`+"\n" {
		t.Errorf("alive line %s", line)
	}
	if m := decodeOne(t, line); m.Kind != KindAlive || !m.At.Equal(at) || m.Payload != nil {
		t.Errorf("alive read back as %+v", m)
	}
	line = AppendLaunch(nil, Launch{PID: 4242})
	if string(line) != `{"t":"launch","pid":4242}`+"\n" {
		t.Errorf("launch line %s", line)
	}
	if m := decodeOne(t, line); m.Kind != KindLaunch || m.Launch.PID != 4242 {
		t.Errorf("launch read back as %+v", m)
	}
	var d Decoder
	for _, bad := range []string{`{"t":"launch"}`, `{"t":"launch","pid":1}`, `{"t":"launch","pid":-5}`, `{"t":"launch","pid":"42"}`, `{"t":"alive","at":"x"}`} {
		if m, err := d.Decode([]byte(bad)); err == nil {
			t.Errorf("%s decoded as %+v", bad, m)
		}
	}
}

func TestDecodeForwardCompatible(t *testing.T) {
	cases := map[string]struct {
		line string
		kind Kind
	}{
		"unknown type":           {`{"t":"gpm","at":5,"sm_active":[1,2,{"x":null}]}`, KindUnknown},
		"unknown type not first": {`{"x":[{"y":"}"}],"t":"future"}`, KindUnknown},
		"unknown keys":           {`{"t":"sample","at":1,"future":{"a":[true,false,null,1.5e3,"x"]},"gpus":[{"index":0,"new_field":-2.5e-3,"temp_c":40}]}`, KindSample},
		"t not first":            {`{"at":1,"t":"sample","gpus":[]}`, KindSample},
		"spaces":                 {" { \"t\" : \"hello\" , \"v\" : 1 } \r", KindHello},
		"hello extra keys":       {`{"t":"hello","v":1,"pcie":true,"gpus":2}`, KindHello},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := decodeOne(t, []byte(c.line))
			if m.Kind != c.kind {
				t.Errorf("kind %v, want %v", m.Kind, c.kind)
			}
		})
	}
	m := decodeOne(t, []byte(`{"t":"sample","gpus":[{"index":0,"new_field":-2.5e-3,"temp_c":40}]}`))
	g := m.Payload.(event.GPUSample).GPUs[0]
	if g.TempC != ok(40) || g.PowerDrawW.Status != event.CellAbsent || g.Name.Status != event.CellAbsent || g.ClockEvents.Status != event.CellAbsent {
		t.Errorf("GPU %+v", g)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := map[string]string{
		"empty":              ``,
		"not an object":      `[1,2]`,
		"no t":               `{"at":1}`,
		"t not a string":     `{"t":5}`,
		"truncated":          `{"t":"sample","gpus":[{"index":0,"temp_c":4`,
		"trailing data":      `{"t":"stale","missed":1} x`,
		"bad number":         `{"t":"sample","gpus":[{"index":0,"temp_c":01}]}`,
		"number as bool":     `{"t":"sample","gpus":[{"index":0,"lost":1}]}`,
		"fraction index":     `{"t":"sample","gpus":[{"index":0.5}]}`,
		"no index":           `{"t":"sample","gpus":[{"temp_c":40}]}`,
		"index overflow":     `{"t":"sample","gpus":[{"index":99999999999999999999}]}`,
		"status overflow":    `{"t":"sample","gpus":[{"index":0,"temp_c":{"status":256}}]}`,
		"object w/o status":  `{"t":"sample","gpus":[{"index":0,"temp_c":{"raw":"x"}}]}`,
		"bad word":           `{"t":"sample","gpus":[{"index":0,"temp_c":{"status":0,"value":"lots"}}]}`,
		"negative mask":      `{"t":"sample","gpus":[{"index":0,"clock_events":-1}]}`,
		"control char":       "{\"t\":\"failure\",\"class\":\"a\x01b\"}",
		"bad escape":         `{"t":"failure","class":"a\qb"}`,
		"bad unicode escape": `{"t":"failure","class":"\u12"}`,
		"unterminated":       `{"t":"failure","class":"abc}`,
		"bad time":           `{"t":"xid","at":[1,1000000000],"code":1}`,
		"time as string":     `{"t":"xid","at":"now","code":1}`,
		"missing comma":      `{"t":"stale" "missed":1}`,
		"extra comma":        `{"t":"stale",,"missed":1}`,
		"deep nesting":       `{"t":"x","y":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, // encoding/json's limit: 10,000
		"hello without v":    `{"t":"hello","gpus":1}`,
		"hello v0":           `{"t":"hello","v":0}`,
		"huge exponent":      `{"t":"sample","gpus":[{"index":0,"temp_c":1e999}]}`,
		"missing not ints":   `{"t":"sample","missing":["a"]}`,
		"interval negative":  `{"t":"hello","v":1,"interval_ms":-1}`,
		"negative index":     `{"t":"sample","gpus":[{"index":-1}]}`,
		"negative missing":   `{"t":"sample","gpus":[],"missing":[0,-3]}`,
		"too many GPUs":      `{"t":"sample","gpus":[` + strings.Repeat(`{"index":0},`, MaxGPUs) + `{"index":0}]}`,
		"too many missing":   `{"t":"sample","missing":[` + strings.Repeat(`0,`, MaxMissing) + `0]}`,
		"too many processes": `{"t":"sample","apps":[` + strings.Repeat(`{},`, MaxApps) + `{}]}`,
		"repeated gpus":      `{"t":"sample","gpus":[],"gpus":[]}`,
		"repeated GPU key":   `{"t":"sample","gpus":[{"index":0,"temp_c":40,"temp_c":41}]}`,
		"repeated index":     `{"t":"sample","gpus":[{"index":0,"index":1}]}`,
		"repeated app key":   `{"t":"sample","apps":[{"pid":5,"name":"a","name":"b"}]}`,
		"null reading":       `{"t":"sample","gpus":[{"index":0,"temp_c":null}]}`,
		"null gpus":          `{"t":"sample","gpus":null}`,
		// encoding/json would read these as zero values: an Xid code 0, a
		// GPU not lost, no throttle reason, a launch of pid 0.
		"null xid code":      `{"t":"xid","index":0,"code":null}`,
		"null xid index":     `{"t":"xid","index":null,"code":79}`,
		"null lost":          `{"t":"sample","gpus":[{"index":0,"lost":null}]}`,
		"null mask":          `{"t":"sample","gpus":[{"index":0,"clock_events":{"status":0,"mask":null}}]}`,
		"null launch pid":    `{"t":"launch","pid":null}`,
		"null stale missed":  `{"t":"stale","missed":null}`,
		"null hello gpus":    `{"t":"hello","v":1,"gpus":null}`,
		"null pid status":    `{"t":"sample","apps":[{"pid":5,"pid_status":null}]}`,
		"null class":         `{"t":"failure","class":null}`,
		"class not a string": `{"t":"failure","class":5}`,
	}
	for name, line := range cases {
		t.Run(name, func(t *testing.T) {
			var d Decoder
			m, err := d.Decode([]byte(line))
			if err == nil {
				t.Fatalf("Decode(%s) = %+v, want an error", line, m)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("error %T %v, want a *SyntaxError", err, err)
			}
		})
	}
}

func TestDecodeNewerVersion(t *testing.T) {
	for _, line := range []string{`{"t":"hello","v":2,"version":"9.0"}`, `{"t":"unavailable","v":7,"reason":"x"}`} {
		var d Decoder
		_, err := d.Decode([]byte(line))
		var ve *VersionError
		if !errors.As(err, &ve) || ve.Got < 2 {
			t.Fatalf("Decode(%s) error %v, want a *VersionError", line, err)
		}
		if !strings.Contains(err.Error(), "this flightdeck reads up to v1") {
			t.Errorf("message %q does not say which version this build reads", err)
		}
	}
}

func TestReader(t *testing.T) {
	long := `{"t":"future","pad":"` + strings.Repeat("x", MaxLineBytes) + `"}`
	stream := strings.Join([]string{
		string(AppendHello(nil, Hello{V: 1, GPUs: 8, Interval: time.Second}))[:0] + `{"t":"hello","v":1,"gpus":8,"interval_ms":1000}`,
		"",
		"garbage \x1b[31m not json",
		`{"t":"future"}`,
		long,
		strings.TrimSuffix(string(AppendSample(nil, sample8())), "\n"),
		`{"t":"stale","missed":2}`, // last line without "\n"
	}, "\n")
	r := NewReader(strings.NewReader(stream))
	type step struct {
		kind Kind
		err  string
	}
	want := []step{{KindHello, ""}, {0, "line 3"}, {KindUnknown, ""}, {0, "line 5: line longer than 4 MiB"}, {KindSample, ""}, {KindStale, ""}}
	for i, w := range want {
		m, err := r.Next()
		if w.err != "" {
			var le *LineError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), w.err) {
				t.Fatalf("step %d: error %v, want a *LineError with %q", i, err, w.err)
			}
			if strings.ContainsRune(le.Excerpt, 0x1b) {
				t.Errorf("excerpt not sanitised: %q", le.Excerpt)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if m.Kind != w.kind {
			t.Fatalf("step %d: kind %v, want %v", i, m.Kind, w.kind)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

// A sample at each bound decodes.
func TestDecodeBounds(t *testing.T) {
	line := `{"t":"sample","gpus":[` + strings.Repeat(`{"index":7},`, MaxGPUs-1) + `{"index":7}],` +
		`"missing":[` + strings.Repeat(`3,`, MaxMissing-1) + `3],"apps":[` + strings.Repeat(`{"pid":5},`, MaxApps-1) + `{"pid":5}]}`
	var d Decoder
	m, err := d.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	s := m.Payload.(event.GPUSample)
	if len(s.GPUs) != MaxGPUs || len(s.Missing) != MaxMissing || len(s.Apps) != MaxApps ||
		s.GPUs[MaxGPUs-1].Index != 7 || s.Missing[0] != 3 || s.Apps[0].PID != 5 {
		t.Errorf("decoded %d GPUs, %d missing, %d processes", len(s.GPUs), len(s.Missing), len(s.Apps))
	}
}

// A line of at most MaxLineBytes makes the decoder allocate a few times its
// size at most, whatever it holds: GPU objects under an unknown key (once
// counted to size the GPU slice: a 4 MiB line allocated 250 MB), empty
// GPU, process or key arrays repeated, or too many of them, keys repeated
// in a GPU object, or the most GPUs and processes with every string
// escaped (each decoded by encoding/json on its own).
func TestDecodeAllocationBounded(t *testing.T) {
	fill := func(prefix, item, suffix string) []byte {
		n := (MaxLineBytes - len(prefix) - len(suffix) - 1) / len(item)
		return []byte(prefix + strings.Repeat(item, n) + suffix + "\n")
	}
	cases := map[string][]byte{
		"GPUs under another key": fill(`{"t":"sample","gpus":[{"index":0}],"x":[`, `{"index":0},`, `0]}`),
		"repeated gpus keys":     fill(`{"t":"sample",`, `"gpus":[],`, `"at":1}`),
		"repeated apps keys":     fill(`{"t":"sample",`, `"apps":[],`, `"at":1}`),
		"repeated missing keys":  fill(`{"t":"sample",`, `"missing":[],`, `"at":1}`),
		"too many GPUs":          fill(`{"t":"sample","gpus":[`, `{"index":0},`, `{"index":0}]}`),
		"too many processes":     fill(`{"t":"sample","apps":[`, `{},`, `{}]}`),
		"too many missing":       fill(`{"t":"sample","missing":[`, `0,`, `0]}`),
		"repeated GPU keys":      fill(`{"t":"sample","gpus":[{"index":0,`, `"name":"\n",`, `"pstate":"P0"}]}`),
		"repeated reading keys":  fill(`{"t":"sample","gpus":[{"index":0,`, `"temp_c":{"status":1},`, `"pstate":"P0"}]}`),
		"repeated time keys":     fill(`{"t":"sample",`, `"at":[1,2],`, `"gpus":[]}`),
		"escapes at the bounds":  []byte(escapedAtBounds()),
	}
	// A decoder whose last sample had the most GPUs and processes allowed
	// (a decoder that sized its slices by the last sample allocated most
	// then).
	var warm Decoder
	big := `{"t":"sample","gpus":[` + strings.Repeat(`{"index":0},`, MaxGPUs-1) + `{"index":0}],"apps":[` +
		strings.Repeat(`{},`, MaxApps-1) + `{}]}`
	if _, err := warm.Decode([]byte(big)); err != nil {
		t.Fatal(err)
	}
	for name, line := range cases {
		t.Run(name, func(t *testing.T) {
			if len(line) > MaxLineBytes {
				t.Fatalf("test line of %d bytes", len(line))
			}
			for _, d := range []*Decoder{{}, &warm} {
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				_, err := d.Decode(line)
				runtime.ReadMemStats(&m1)
				if got := m1.TotalAlloc - m0.TotalAlloc; got > 4*MaxLineBytes {
					t.Errorf("decoding a %d-byte line allocated %d MiB (error %v)", len(line), got>>20, err)
				}
			}
		})
	}
}

// escapedAtBounds is a sample of MaxGPUs GPUs and MaxApps processes whose
// every string needs unescaping, the most decoding work a line may ask.
func escapedAtBounds() string {
	var b strings.Builder
	b.WriteString(`{"t":"sample","gpus":[`)
	for i := range MaxGPUs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"index":0`)
		for _, k := range []string{"name", "pci_bus_id", "uuid", "util_gpu_pct", "util_mem_pct", "mem_used_mib",
			"mem_total_mib", "power_draw_w", "power_limit_w", "temp_c", "sm_clock_mhz", "mem_clock_mhz",
			"sm_clock_max_mhz", "fan_speed_pct", "pstate", "pcie_gen_current", "pcie_gen_max", "pcie_width_current",
			"pcie_width_max", "clock_events", "persistence_mode", "ecc_mode", "mig_mode", "pcie_rx_kbs", "pcie_tx_kbs"} {
			b.WriteString(`,"` + k + `":"\n"`)
		}
		b.WriteByte('}')
	}
	b.WriteString(`],"apps":[`)
	for i := range MaxApps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"pid":1,"name":"\n","used_mib":"\n","pci_bus_id":"\n","uuid":"\n"}`)
	}
	b.WriteString("]}\n")
	return b.String()
}
