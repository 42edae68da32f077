package journal

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The NVML additions to gpu-sample (PCIe throughput, Apps) round-trip
// exactly, nil Apps and empty Apps apart, and use their compact forms.
func TestGPUSampleNVMLRoundTrip(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := nvmlSamples(at)
	var evs []event.Event
	for _, s := range samples {
		evs = append(evs, event.Event{At: at(s.at), Data: s.s})
	}
	path := writeJournal(t, evs)
	got := readAll(t, path)
	if len(got) != len(evs) {
		t.Fatalf("read %d events, wrote %d", len(got), len(evs))
	}
	for i := range evs {
		want, have := evs[i].Data.(event.GPUSample), got[i].Data.(event.GPUSample)
		if d := diffPayload(want, have); d != "" {
			t.Errorf("sample %d: %s", i, d)
		}
		if (want.Apps == nil) != (have.Apps == nil) {
			t.Errorf("sample %d: Apps nil=%v, read back nil=%v", i, want.Apps == nil, have.Apps == nil)
		}
		if !reflect.DeepEqual(want.GPUs, have.GPUs) {
			t.Errorf("sample %d: GPUs differ:\n%+v\n%+v", i, want.GPUs, have.GPUs)
		}
	}

	// The lines: what each sample must have used.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")[1:]
	for _, c := range []struct {
		i    int
		want string
		why  string
	}{
		{0, `[125,"gpu-sample",[17,[[4123,"python3",`, "a keyframe with its apps whole"},
		{0, `[0,67108863,"NVIDIA H200"`, "a full row with PCIe throughput: every field"},
		{1, `[125.5,"gpu-sample",[32,[0,`, "the keyframe's apps: flag 32, nothing written"},
		{2, `[126,"gpu-sample",[16,[0,[4124,`, "unchanged apps by reference, changed ones whole"},
		{2, `,2],[0,`, "the third app by reference"},
		{3, `[126.5,"gpu-sample",[17,[[5123,`, "every app new: a keyframe"},
		{4, `[127,"gpu-sample",[16,[],[0,`, "empty Apps: an empty list"},
		{5, `[127.5,"gpu-sample",[0,[0,`, "nil Apps: no flag"},
		{6, `[128,"gpu-sample",[16,[0,[5000,`, "one app new: no keyframe"},
		{6, `[10,""]`, "PCIe back to Absent in a delta"},
		{7, `[1,67108863,"NVIDIA A100-SXM4-80GB"`, "every first field changed: written as a full row, with Rx"},
	} {
		if !strings.Contains(lines[c.i], c.want) {
			t.Errorf("line %d lacks %s (%s):\n%s", c.i, c.want, c.why, lines[c.i])
		}
	}
}

// An nvidia-smi sample (PCIe throughput Absent, Apps nil) is written as
// before the NVML additions, byte for byte: a journal of an nvidia-smi
// session does not grow, and readers built before them still read it.
func TestGPUSampleNvidiaSMIUnchanged(t *testing.T) {
	old, err := os.ReadFile("testdata/recorded-issue7.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	now, err := os.ReadFile(recordedFixture)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for _, l := range bytes.SplitAfter(old, []byte{'\n'}) {
		if bytes.Contains(l, []byte(`"gpu-sample"`)) {
			want = append(want, l)
		}
	}
	if len(want) < 5 {
		t.Fatalf("only %d gpu-sample lines in the old fixture", len(want))
	}
	for _, l := range want {
		if !bytes.Contains(now, l) {
			t.Errorf("an nvidia-smi sample line is no longer written as it was:\n%s", l)
		}
	}
}

// A journal written before issue 8 reads the same as then: its samples
// have PCIe throughput Absent and Apps nil, and the GPU rows of its
// experiments, whose JSON has no PCIe keys, read Absent too (never a
// 0 KB/s reading).
func TestJournalBeforeNVMLStillReads(t *testing.T) {
	got := readAll(t, "testdata/recorded-issue7.jsonl")
	var want []event.Event
	for _, e := range append(roundTripEvents(), sessionEvents()...) {
		switch p := e.Data.(type) {
		case event.Xid, event.GPUSource, event.HostState, event.HostChanges, event.BisectStart, event.BisectLaunch, event.BisectEnd,
			event.EngineSample, event.EngineEndpoint, event.Topology, event.NCCL, event.KernelLog: // newer kinds
			continue
		case event.GPUSample:
			if p.Apps != nil || len(p.GPUs) > 0 && p.GPUs[0].PCIeRxKBs.Status != event.CellAbsent {
				continue // an NVML sample: not in that journal
			}
		case event.Session:
			p.Version = 1 // written in format version 1
			e.Data = p
		}
		want = append(want, e)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if d := diffPayload(want[i].Data, got[i].Data); d != "" {
			t.Errorf("event %d (%s): %s", i, want[i].Data.Kind(), d)
		}
		if s, ok := got[i].Data.(event.GPUSample); ok && s.Apps != nil {
			t.Errorf("event %d: Apps %v, want nil", i, s.Apps)
		}
	}
}

// Damaged or impossible gpu-sample data is an error, never a panic nor a
// sample decoded against the wrong keyframe.
func TestGPUSampleDecodeErrors(t *testing.T) {
	key := `[17,[[4123,"python3",80123,"b","u"]],[0,16777215,"H200","b","u",1,2,3,4,5,6,7,8,9,10,11,"P0",5,5,16,16,0,"E","E","E",0]]`
	keyNoApps := `[1,[0,16777215,"H200","b","u",1,2,3,4,5,6,7,8,9,10,11,"P0",5,5,16,16,0,"E","E","E",0]]`
	for _, c := range []struct {
		name     string
		key      string // decoded first ("" none)
		data     string
		contains string
	}{
		{"flags past the last bit", "", `[64]`, "flags"},
		{"both Apps flags", key, `[48,[],[0,0]]`, "flags"},
		{"keyframe's Apps without a keyframe", "", `[32,[0,0]]`, "keyframe"},
		{"keyframe's Apps, the keyframe has none", keyNoApps, `[32,[0,0]]`, "keyframe"},
		{"keyframe's Apps in a keyframe", "", `[33]`, "keyframe"},
		{"an app by reference without a keyframe", "", `[16,[0]]`, "keyframe"},
		{"an app by reference past the keyframe's", key, `[16,[1]]`, "keyframe's app 1"},
		{"a negative reference", key, `[16,[-1]]`, "malformed"},
		{"an app of four fields", key, `[16,[[1,"a",2,"b"]]]`, "app 0"},
		{"a pid that is text", key, `[16,[["1","a",2,"b","u"]]]`, "app 0 pid"},
		{"a pid status of OK", key, `[16,[[[0,5],"a",2,"b","u"]]]`, "app 0 pid"},
		{"a pid past int32", key, `[16,[[4294967296,"a",2,"b","u"]]]`, "app 0 pid"},
		{"used memory that is text", key, `[16,[[1,"a","2","b","u"]]]`, "app 0"},
		{"an empty app", key, `[16,[[]]]`, "app 0"},
		{"Apps flag with nothing after", "", `[16]`, "apps"},
		{"Apps not a list", "", `[17,{}]`, "apps"},
		{"a mask past the PCIe fields", key, `[0,[0,67108864]]`, "row"},
		{"a delta without its keyframe", "", `[0,[0,16777216,5]]`, "keyframe"},
		{"PCIe throughput that is text", key, `[0,[0,16777216,"x"]]`, "PCIeRxKBs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &decState{created: t0}
			if c.key != "" {
				if _, err := decGPUSample(st, t0, []byte(c.key)); err != nil {
					t.Fatalf("keyframe: %v", err)
				}
			}
			p, err := decGPUSample(st, t0, []byte(c.data))
			if err == nil {
				t.Fatalf("decoded %+v", p)
			}
			if !strings.Contains(err.Error(), c.contains) && !(c.contains == "malformed" && errors.Is(err, errSyntax)) {
				t.Errorf("error %q, want it to mention %q", err, c.contains)
			}
		})
	}
}

// Decoded Apps share nothing with the decoder's keyframe: a consumer that
// edits a sample's Apps (the TUI sanitises names in place) cannot change
// the next sample decoded from the same keyframe.
func TestGPUSampleAppsNotShared(t *testing.T) {
	st := &decState{created: t0}
	key := `[17,[[4123,"python3",80123,"b","u"]],[0,16777215,"H200","b","u",1,2,3,4,5,6,7,8,9,10,11,"P0",5,5,16,16,0,"E","E","E",0]]`
	p, err := decGPUSample(st, t0, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	p.(event.GPUSample).Apps[0].PID = 1
	for _, data := range []string{`[32,[0,0]]`, `[16,[0],[0,0]]`} {
		q, err := decGPUSample(st, t0, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		apps := q.(event.GPUSample).Apps
		if len(apps) != 1 || apps[0].PID != 4123 {
			t.Fatalf("%s: apps %+v", data, apps)
		}
		apps[0].PID = 2
	}
}

// FuzzGPUSample decodes a keyframe then a sample against it: never a
// panic, and whatever decodes encodes (as a keyframe, fresh) to data that
// decodes and re-encodes to the same bytes: encoder and decoder agree on
// every form, the NVML ones included.
func FuzzGPUSample(f *testing.F) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	st := &encState{created: t0}
	var prev []byte
	for _, s := range nvmlSamples(at) {
		b, err := encGPUSample(st, nil, at(s.at), s.s)
		if err != nil {
			f.Fatal(err)
		}
		if prev != nil {
			f.Add(prev, b)
		}
		prev = b
	}
	f.Add([]byte(`[17,[[4123,"a",1,"b","u"]],[0,16777215,"H","b","u",1,2,3,4,5,6,7,8,9,10,11,"P0",5,5,16,16,0,"E","E","E",0]]`), []byte(`[16,[0,0,[[2,0],[1,"x"],[1,"[N/A]",3],[10,""],"u"]],[0,50331648,1,2]]`))
	f.Fuzz(func(t *testing.T, key, next []byte) {
		ds := &decState{created: t0}
		for i, data := range [][]byte{key, next} {
			p, err := decGPUSample(ds, at(float64(i)), data)
			if err != nil {
				continue
			}
			b1, err := encGPUSample(&encState{created: t0}, nil, at(float64(i)), p)
			if err != nil {
				t.Fatalf("encode %+v: %v", p, err)
			}
			q, err := decGPUSample(&decState{created: t0}, at(float64(i)), b1)
			if err != nil {
				t.Fatalf("%s decoded as %+v, encoded as %s, which does not decode: %v", data, p, b1, err)
			}
			if (p.(event.GPUSample).Apps == nil) != (q.(event.GPUSample).Apps == nil) {
				t.Fatalf("%s: Apps nil=%v, then %v", b1, p.(event.GPUSample).Apps == nil, q.(event.GPUSample).Apps == nil)
			}
			b2, err := encGPUSample(&encState{created: t0}, nil, at(float64(i)), q)
			if err != nil || !bytes.Equal(b1, b2) {
				t.Fatalf("re-encoded differently:\n%s\n%s (%v)", b1, b2, err)
			}
		}
	})
}

// TestDecodeSampleAllocations: decoding a gpu-sample allocates per
// sample, not per field (an error was once built for every field read).
func TestDecodeSampleAllocations(t *testing.T) {
	var es encState
	es.created = t0
	key, err := encGPUSample(&es, nil, t0, testSample(t0, 0, 8))
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(500 * time.Millisecond)
	delta, err := encGPUSample(&es, nil, at, testSample(at, 1, 8))
	if err != nil {
		t.Fatal(err)
	}
	ds := decState{created: t0}
	if _, err := decGPUSample(&ds, t0, key); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"delta": delta} {
		n := testing.AllocsPerRun(50, func() {
			if _, err := decGPUSample(&ds, at, data); err != nil {
				t.Fatal(err)
			}
		})
		// The GPU slice and the payload's interface box.
		if n > 3 {
			t.Errorf("%s: %.0f allocations a sample of 8 GPUs", name, n)
		}
	}
}
