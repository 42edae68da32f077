package agent

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The protocol's lines as encoding/json types: struct tags name the keys,
// in the order the encoder writes them, and the few values of more than
// one JSON shape (a reading, a text, clock events, a time) have their own
// MarshalJSON and UnmarshalJSON. The agent writes a line a second, so the
// library's reflection costs nothing that matters (docs/performance.md).
//
// Decoding keeps a line's allocations within a few times its length
// (bounded by MaxLineBytes): the arrays of a sample are counted before
// they are decoded (MaxGPUs, MaxMissing, MaxApps), and a key whose value
// has its own decoder may appear once in its object, so that a line cannot
// make the decoder run one many times.

type helloJSON struct {
	T          string  `json:"t"`
	V          wInt    `json:"v"`
	Version    wString `json:"version"`
	Driver     wString `json:"driver"`
	NVML       wString `json:"nvml"`
	CUDA       wInt    `json:"cuda"`
	GPUs       wInt    `json:"gpus"`
	IntervalMS wInt64  `json:"interval_ms"`
	Simulated  wBool   `json:"simulated,omitempty"`
}

type unavailableJSON struct {
	T      string  `json:"t"`
	V      wInt    `json:"v"`
	Reason wString `json:"reason"`
	Code   wInt    `json:"code"`
}

type launchJSON struct {
	T   string `json:"t"`
	PID wInt   `json:"pid"`
}

type aliveJSON struct {
	T  string   `json:"t"`
	At wireTime `json:"at,omitzero"`
}

type xidJSON struct {
	T     string   `json:"t"`
	At    wireTime `json:"at,omitzero"`
	Index wInt     `json:"index"`
	UUID  wString  `json:"uuid,omitempty"`
	BusID wString  `json:"pci_bus_id,omitempty"`
	Code  wUint64  `json:"code"`
}

type failureJSON struct {
	T           string   `json:"t"`
	At          wireTime `json:"at,omitzero"`
	Class       wString  `json:"class"`
	BusID       wString  `json:"pci_bus_id,omitempty"`
	Reason      wString  `json:"reason,omitempty"`
	NeedsReboot wBool    `json:"needs_reboot,omitempty"`
	NVMLVersion wString  `json:"nvml_version,omitempty"`
	Line        wString  `json:"line,omitempty"`
}

type staleJSON struct {
	T          string   `json:"t"`
	At         wireTime `json:"at,omitzero"`
	LastSample wireTime `json:"last_sample,omitzero"`
	Missed     wInt     `json:"missed"`
	Reason     wString  `json:"reason,omitempty"`
}

// sampleOut is a sample line as the encoder writes it: "missing" and
// "apps" left out when nil, [] when empty.
type sampleOut struct {
	T       string    `json:"t"`
	At      wireTime  `json:"at,omitzero"`
	GPUs    []gpuJSON `json:"gpus,omitzero"`
	Missing []int     `json:"missing,omitzero"`
	Apps    []appJSON `json:"apps,omitzero"`
}

// sampleIn is a sample line as the decoder reads it.
type sampleIn struct {
	At      wireTime       `json:"at"`
	GPUs    list[gpuJSON]  `json:"gpus"`
	Missing list[gpuIndex] `json:"missing"`
	Apps    list[appJSON]  `json:"apps"`
}

// gpuJSON is a GPU object: one key per event.GPU field, named with its
// unit; a key left out is a field that was not read (Absent).
type gpuJSON struct {
	Index            gpuIndex    `json:"index"`
	Name             text        `json:"name,omitzero"`
	BusID            text        `json:"pci_bus_id,omitzero"`
	UUID             text        `json:"uuid,omitzero"`
	UtilGPUPct       reading     `json:"util_gpu_pct,omitzero"`
	UtilMemPct       reading     `json:"util_mem_pct,omitzero"`
	MemUsedMiB       reading     `json:"mem_used_mib,omitzero"`
	MemTotalMiB      reading     `json:"mem_total_mib,omitzero"`
	PowerDrawW       reading     `json:"power_draw_w,omitzero"`
	PowerLimitW      reading     `json:"power_limit_w,omitzero"`
	TempC            reading     `json:"temp_c,omitzero"`
	SMClockMHz       reading     `json:"sm_clock_mhz,omitzero"`
	MemClockMHz      reading     `json:"mem_clock_mhz,omitzero"`
	SMClockMax       reading     `json:"sm_clock_max_mhz,omitzero"`
	FanPct           reading     `json:"fan_speed_pct,omitzero"`
	PState           text        `json:"pstate,omitzero"`
	PCIeGenCurrent   reading     `json:"pcie_gen_current,omitzero"`
	PCIeGenMax       reading     `json:"pcie_gen_max,omitzero"`
	PCIeWidthCurrent reading     `json:"pcie_width_current,omitzero"`
	PCIeWidthMax     reading     `json:"pcie_width_max,omitzero"`
	ClockEvents      clockEvents `json:"clock_events,omitzero"`
	Persistence      text        `json:"persistence_mode,omitzero"`
	ECCMode          text        `json:"ecc_mode,omitzero"`
	MIGMode          text        `json:"mig_mode,omitzero"`
	Lost             wBool       `json:"lost,omitempty"`
	PCIeRxKBs        reading     `json:"pcie_rx_kbs,omitzero"`
	PCIeTxKBs        reading     `json:"pcie_tx_kbs,omitzero"`
}

func (gpuJSON) bound() (int, string) { return MaxGPUs, "GPUs" }

func gpuToJSON(g *event.GPU) gpuJSON {
	return gpuJSON{
		Index: gpuIndex{n: g.Index}, Name: text{t: g.Name}, BusID: text{t: g.BusID}, UUID: text{t: g.UUID},
		UtilGPUPct: reading{r: g.UtilGPUPct}, UtilMemPct: reading{r: g.UtilMemPct},
		MemUsedMiB: reading{r: g.MemUsedMiB}, MemTotalMiB: reading{r: g.MemTotalMiB},
		PowerDrawW: reading{r: g.PowerDrawW}, PowerLimitW: reading{r: g.PowerLimitW},
		TempC: reading{r: g.TempC}, SMClockMHz: reading{r: g.SMClockMHz}, MemClockMHz: reading{r: g.MemClockMHz},
		SMClockMax: reading{r: g.SMClockMax}, FanPct: reading{r: g.FanPct}, PState: text{t: g.PState},
		PCIeGenCurrent: reading{r: g.PCIeGenCurrent}, PCIeGenMax: reading{r: g.PCIeGenMax},
		PCIeWidthCurrent: reading{r: g.PCIeWidthCurrent}, PCIeWidthMax: reading{r: g.PCIeWidthMax},
		ClockEvents: clockEvents{c: g.ClockEvents}, Persistence: text{t: g.Persistence},
		ECCMode: text{t: g.ECCMode}, MIGMode: text{t: g.MIGMode}, Lost: wBool(g.Lost),
		PCIeRxKBs: reading{r: g.PCIeRxKBs}, PCIeTxKBs: reading{r: g.PCIeTxKBs},
	}
}

// gpu returns the decoded GPU; its left-out keys are Absent.
func (j *gpuJSON) gpu() (event.GPU, error) {
	if !j.Index.set {
		return event.GPU{}, errors.New(`GPU object without "index"`)
	}
	return event.GPU{
		Index: j.Index.n, Name: j.Name.get(), BusID: j.BusID.get(), UUID: j.UUID.get(),
		UtilGPUPct: j.UtilGPUPct.get(), UtilMemPct: j.UtilMemPct.get(),
		MemUsedMiB: j.MemUsedMiB.get(), MemTotalMiB: j.MemTotalMiB.get(),
		PowerDrawW: j.PowerDrawW.get(), PowerLimitW: j.PowerLimitW.get(),
		TempC: j.TempC.get(), SMClockMHz: j.SMClockMHz.get(), MemClockMHz: j.MemClockMHz.get(),
		SMClockMax: j.SMClockMax.get(), FanPct: j.FanPct.get(), PState: j.PState.get(),
		PCIeGenCurrent: j.PCIeGenCurrent.get(), PCIeGenMax: j.PCIeGenMax.get(),
		PCIeWidthCurrent: j.PCIeWidthCurrent.get(), PCIeWidthMax: j.PCIeWidthMax.get(),
		ClockEvents: j.ClockEvents.get(), Persistence: j.Persistence.get(),
		ECCMode: j.ECCMode.get(), MIGMode: j.MIGMode.get(), Lost: bool(j.Lost),
		PCIeRxKBs: j.PCIeRxKBs.get(), PCIeTxKBs: j.PCIeTxKBs.get(),
	}, nil
}

// appJSON is a compute process object.
type appJSON struct {
	PID       wInt    `json:"pid"`
	PIDStatus wStatus `json:"pid_status,omitempty"`
	Name      text    `json:"name,omitzero"`
	UsedMiB   reading `json:"used_mib,omitzero"`
	BusID     text    `json:"pci_bus_id,omitzero"`
	UUID      text    `json:"uuid,omitzero"`
}

func (appJSON) bound() (int, string) { return MaxApps, "processes" }

func appToJSON(a *event.ComputeApp) appJSON {
	return appJSON{PID: wInt(a.PID), PIDStatus: wStatus(a.PIDStatus), Name: text{t: a.Name}, UsedMiB: reading{r: a.UsedMiB},
		BusID: text{t: a.BusID}, UUID: text{t: a.UUID}}
}

func (j *appJSON) app() event.ComputeApp {
	return event.ComputeApp{PID: int(j.PID), PIDStatus: event.CellStatus(j.PIDStatus), Name: j.Name.get(), UsedMiB: j.UsedMiB.get(),
		BusID: j.BusID.get(), UUID: j.UUID.get()}
}

// list is a JSON array of at most T's bound elements, counted before any
// is decoded. Its key may appear once in a line.
type list[T interface{ bound() (int, string) }] struct {
	v   []T
	set bool
}

// uncounted is an array element list counts: zero-sized, so that counting
// allocates nothing per element.
type uncounted struct{}

func (*uncounted) UnmarshalJSON([]byte) error { return nil }

func (l *list[T]) UnmarshalJSON(b []byte) error {
	if err := once(&l.set); err != nil {
		return err
	}
	if b[0] != '[' {
		return errors.New("expected an array")
	}
	var n []uncounted
	if err := unmarshalValue(b, &n); err != nil {
		return err
	}
	var zero T
	if limit, what := zero.bound(); len(n) > limit {
		return fmt.Errorf("more than %d %s", limit, what)
	}
	l.v = make([]T, 0, len(n))
	return unmarshalValue(b, &l.v)
}

// gpuIndex is a GPU index, an integer 0 or more ("index", "missing").
type gpuIndex struct {
	n   int
	set bool
}

func (gpuIndex) bound() (int, string) { return MaxMissing, "missing GPUs" }

func (g gpuIndex) MarshalJSON() ([]byte, error) { return strconv.AppendInt(nil, int64(g.n), 10), nil }

func (g *gpuIndex) UnmarshalJSON(b []byte) error {
	if err := once(&g.set); err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(b), 10, 0)
	switch {
	case err != nil:
		return errors.New("expected a GPU index (an integer)")
	case n < 0:
		return errors.New("negative GPU index")
	}
	g.n = int(n)
	return nil
}
