package event

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// CellStatus says whether a cell held a value, and if not, which non-value.
type CellStatus uint8

const (
	CellOK           CellStatus = iota // a parsed value
	CellNA                             // "[N/A]" or "N/A"
	CellNotSupported                   // "[Not Supported]"
	CellUnknownError                   // "[Unknown Error]"
	CellLost                           // "[GPU is lost]"
	CellErr                            // "ERR!"
	CellEmpty                          // "" (an empty cell)
	CellDeprecated                     // "[Requested functionality has been deprecated]"
	CellOther                          // another bracketed token, e.g. "[Insufficient Permissions]"
	CellInvalid                        // garbled: text where a number was expected
	CellAbsent                         // not queried: the driver does not support the field
)

var cellStatusNames = [...]string{"ok", "n/a", "not-supported", "unknown-error", "lost", "err", "empty", "deprecated", "other", "invalid", "absent"}

func (s CellStatus) String() string {
	if int(s) < len(cellStatusNames) {
		return cellStatusNames[s]
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Reading is one numeric cell. Value is meaningful only when Status is OK;
// otherwise Raw holds the literal token as nvidia-smi printed it ("[N/A]").
type Reading struct {
	Value  float64
	Status CellStatus
	Raw    string
}

// Valid reports whether the reading holds a value.
func (r Reading) Valid() bool { return r.Status == CellOK }

// Text is one string cell (name, bus id, P-state, persistence mode). S is
// the trimmed text when Status is OK, else the literal token.
type Text struct {
	S      string
	Status CellStatus
}

// ClockEventReason is one bit of nvidia-smi's clocks_event_reasons.active
// bitmask (called clocks_throttle_reasons before driver 535; NVML
// nvmlClocksEventReason*).
type ClockEventReason uint64

const (
	ReasonGPUIdle              ClockEventReason = 0x1
	ReasonApplicationsClocks   ClockEventReason = 0x2
	ReasonSWPowerCap           ClockEventReason = 0x4
	ReasonHWSlowdown           ClockEventReason = 0x8
	ReasonSyncBoost            ClockEventReason = 0x10
	ReasonSWThermalSlowdown    ClockEventReason = 0x20
	ReasonHWThermalSlowdown    ClockEventReason = 0x40
	ReasonHWPowerBrakeSlowdown ClockEventReason = 0x80
	ReasonDisplayClockSetting  ClockEventReason = 0x100
)

// ClockEvents is the active clock-event (throttle) reason bitmask.
type ClockEvents struct {
	Mask   ClockEventReason
	Status CellStatus // OK when Mask was read
	Raw    string     // literal token when Status is not OK
}

// GPU is one GPU's row of one sample. Units are in the field names.
type GPU struct {
	Index int  // nvidia-smi index (0-based)
	Name  Text // "NVIDIA H200"
	BusID Text // "00000000:83:00.0"
	UUID  Text

	UtilGPUPct  Reading // utilization.gpu, %
	UtilMemPct  Reading // utilization.memory, %
	MemUsedMiB  Reading // memory.used, MiB
	MemTotalMiB Reading // memory.total, MiB
	PowerDrawW  Reading // power.draw, W
	PowerLimitW Reading // power.limit, W
	TempC       Reading // temperature.gpu, °C
	SMClockMHz  Reading // clocks.current.sm, MHz
	MemClockMHz Reading // clocks.current.memory, MHz
	SMClockMax  Reading // clocks.max.sm, MHz
	FanPct      Reading // fan.speed, %

	PState           Text    // "P0" … "P12"
	PCIeGenCurrent   Reading // pcie.link.gen.current
	PCIeGenMax       Reading // pcie.link.gen.max (min of GPU and host)
	PCIeWidthCurrent Reading // pcie.link.width.current, lanes
	PCIeWidthMax     Reading // pcie.link.width.max, lanes

	ClockEvents ClockEvents // clocks_event_reasons.active
	Persistence Text        // persistence_mode: "Enabled" / "Disabled"
	ECCMode     Text        // ecc.mode.current: "Enabled" / "Disabled" / "[N/A]"
	MIGMode     Text        // mig.mode.current

	// Lost is set when any cell of the row read "[GPU is lost]": the GPU
	// fell off the bus mid-stream and needs a reboot; its other readings may
	// still hold values from before.
	Lost bool

	// PCIeRxKBs and PCIeTxKBs are the PCIe receive and transmit throughput,
	// KB/s over NVML's 20 ms window (nvmlDeviceGetPcieThroughput). Only the
	// NVML sampler fills them, and only when asked (each read blocks about
	// 20 ms per GPU); otherwise their Status is Absent.
	PCIeRxKBs Reading
	PCIeTxKBs Reading
}

// AbsentGPU returns a row for GPU index whose every field is Absent (not
// read: the driver lacks the function, the query left the field out, or
// the option is off) and Lost false. Samplers and decoders start each row
// from it and fill what they read; it is the one definition of "nothing
// read" shared by the nvidia-smi parser, the NVML sampler and the agent's
// decoder.
func AbsentGPU(index int) GPU {
	a := Reading{Status: CellAbsent}
	t := Text{Status: CellAbsent}
	return GPU{
		Index: index, Name: t, BusID: t, UUID: t,
		UtilGPUPct: a, UtilMemPct: a, MemUsedMiB: a, MemTotalMiB: a,
		PowerDrawW: a, PowerLimitW: a, TempC: a, SMClockMHz: a, MemClockMHz: a,
		SMClockMax: a, FanPct: a, PState: t,
		PCIeGenCurrent: a, PCIeGenMax: a, PCIeWidthCurrent: a, PCIeWidthMax: a,
		ClockEvents: ClockEvents{Status: CellAbsent},
		Persistence: t, ECCMode: t, MIGMode: t,
		PCIeRxKBs: a, PCIeTxKBs: a,
	}
}

// ShowsLost reports whether the row's name, GPU utilisation, memory used
// or temperature reads "[GPU is lost]": the cockpit (and a journal's
// catch-up, which must agree with it) then marks the row lost, and a
// sample of it does not clear a failure on its bus. Lost, by contrast, is
// set by any cell.
func (g *GPU) ShowsLost() bool {
	return g.Name.Status == CellLost || g.UtilGPUPct.Status == CellLost ||
		g.MemUsedMiB.Status == CellLost || g.TempC.Status == CellLost
}

// GPUSample is one tick of the sampler: every GPU the host reported at At.
type GPUSample struct {
	At   time.Time // when the tick's first row was read
	GPUs []GPU     // sorted by Index

	// Missing lists, sorted, the indices of GPUs that the host has but
	// that sent no usable row in this tick: nvidia-smi stopped printing
	// them or their row was garbled (GPUs it reported earlier in this
	// sampler's run), or NVML gives no handle for them (a GPU whose handle
	// fails, from NVML's start or since the agent restarted). They are not
	// in GPUs, but they are GPUs of the host: Count counts them, and a
	// view keeps their rows (the last values, or MissingGPU's) and marks
	// them as not reporting.
	Missing []int

	// Apps are the compute processes on the sample's GPUs with their GPU
	// memory, as `nvidia-smi --query-compute-apps` lists them (BusID and
	// UUID name each one's GPU; PIDs are the host's), sorted by GPU index
	// then PID. The NVML sampler reads them
	// (nvmlDeviceGetComputeRunningProcesses); the --query-gpu stream does
	// not, and leaves Apps nil. Empty, not nil, when NVML listed none.
	Apps []ComputeApp
}

// Count is how many GPUs the sample accounts for: the distinct indices of
// its rows and of Missing. A GPU whose handle fails is still one of the
// host's, and every count of GPUs (the default TP, the "8x NVIDIA H200"
// summaries) counts it.
func (s *GPUSample) Count() int {
	n := len(s.GPUs)
	for k, m := range s.Missing {
		if !s.has(m) && !slices.Contains(s.Missing[:k], m) {
			n++
		}
	}
	return n
}

// has reports whether the sample has a row for GPU index.
func (s *GPUSample) has(index int) bool {
	return slices.ContainsFunc(s.GPUs, func(g GPU) bool { return g.Index == index })
}

// MissingGPU is the row that stands for GPU index while a sample lists it
// in Missing: nothing was read (every field Absent) and Lost is set, so
// that summaries count it and name it lost; its name, bus id and UUID are
// last's, the GPU's latest row from an earlier sample, when last is not
// nil.
func MissingGPU(index int, last *GPU) GPU {
	g := AbsentGPU(index)
	if last != nil {
		g.Name, g.BusID, g.UUID = last.Name, last.BusID, last.UUID
	}
	g.Lost = true
	return g
}

// WithMissing is every GPU the sample accounts for, by index: its rows,
// and for each index of Missing without one a MissingGPU row whose
// identity is taken from prev, the GPUs of an earlier sample (an earlier
// WithMissing's, so that a name read once is kept), which may be nil. It
// returns s.GPUs itself when Missing adds nothing.
func (s *GPUSample) WithMissing(prev []GPU) []GPU {
	if s.Count() == len(s.GPUs) {
		return s.GPUs
	}
	out := slices.Clone(s.GPUs)
	for _, m := range s.Missing {
		if slices.ContainsFunc(out, func(g GPU) bool { return g.Index == m }) {
			continue
		}
		var last *GPU
		if k := slices.IndexFunc(prev, func(g GPU) bool { return g.Index == m }); k >= 0 {
			last = &prev[k]
		}
		out = append(out, MissingGPU(m, last))
	}
	slices.SortStableFunc(out, func(a, b GPU) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// GPUFailureClass names a whole-command nvidia-smi failure, in kebab case:
// "gpu-lost", "no-devices", "driver-not-loaded", "driver-library-mismatch",
// "nvml-init-unknown-error", or, for "Unable to determine the device handle
// for GPU …: <reason>", the reason in kebab case ("unknown-error",
// "not-found", …), and for another "Failed to initialize NVML: <reason>",
// "nvml-init-<reason in kebab case>". The sampler adds
// "nvidia-smi-not-found" when the host has no nvidia-smi.
type GPUFailureClass string

const (
	GPUFailLost                  GPUFailureClass = "gpu-lost"
	GPUFailNoDevices             GPUFailureClass = "no-devices"
	GPUFailDriverNotLoaded       GPUFailureClass = "driver-not-loaded"
	GPUFailDriverLibraryMismatch GPUFailureClass = "driver-library-mismatch"
	GPUFailNVMLInitUnknown       GPUFailureClass = "nvml-init-unknown-error"
	// FailNoNVIDIASMI: the host has no nvidia-smi on its PATH (the shell
	// answered exit status 127).
	GPUFailNoNVIDIASMI GPUFailureClass = "nvidia-smi-not-found"
)

// GPUFailure is a whole-command failure that nvidia-smi printed instead of CSV.
// It is an event payload.
type GPUFailure struct {
	Class       GPUFailureClass
	BusID       string // "0000:0B:00.0" when the message names one
	Reason      string // the message's reason text, e.g. "Unknown Error"
	NeedsReboot bool   // "Reboot the system to recover this GPU"
	NVMLVersion string // "570.124" from "NVML library version: …"
	Line        string // the message line as printed
}

// GPUStale reports that no complete sample arrived for Missed intervals; the
// sampler restarts its nvidia-smi stream. It is an event payload.
type GPUStale struct {
	LastSample time.Time // zero if none ever arrived
	Missed     int       // whole intervals since LastSample (or since the sampler started)
	// Reason says why the stream is being restarted: "no sample for 3
	// intervals", "nvidia-smi exited: exit status 6", "connection to host
	// lost", … Sanitised, at most a few hundred bytes.
	Reason string
}

// Xid is one NVIDIA driver error event (an "Xid") reported for a GPU:
// through an NVML event set (nvmlEventTypeXidCriticalError), or read from
// the kernel log (`journalctl -k`, `dmesg`: "NVRM: Xid (PCI:0000:2b:00):
// 79, pid=…, name=…, GPU has fallen off the bus"). NVML does not replay
// events from before registration; the kernel log keeps the history since
// the last boot. It is an event payload; the event's time is when the
// cockpit learnt of it (for a kernel line read at connect, the read), and
// KernelTime is when the kernel logged it.
type Xid struct {
	Index int    // GPU index (NVML/nvidia-smi order); -1 when NVML named no device
	UUID  string // "GPU-…", "" when unknown
	BusID string // "00000000:83:00.0", "" when unknown
	Code  uint64 // the Xid number, e.g. 79 ("GPU has fallen off the bus")

	// Source is XidFromNVML ("", the zero value: an NVML event) or
	// XidFromKernel (a kernel log line).
	Source XidSource `json:",omitempty"`
	// KernelTime is the kernel line's wall time (journalctl's, or dmesg's
	// boot time plus its stamp); zero when unknown.
	KernelTime time.Time `json:",omitzero"`
	// Uptime is the kernel's stamp, seconds since boot ("[74889.644138]");
	// 0 when the line had none.
	Uptime float64 `json:",omitempty"`
	// Boot is the boot the line belongs to (the host's boot id, or its
	// boot time), so that a line is journaled once across sessions.
	Boot string `json:",omitempty"`
	// PID and Process are the process the driver named ("pid=13705,
	// name=python3"); 0 and "" when not printed or "<unknown>".
	PID     int    `json:",omitempty"`
	Process string `json:",omitempty"`
	// Message is the driver's text after the code, sanitised ("GPU has
	// fallen off the bus."), "" for an NVML event.
	Message string `json:",omitempty"`
}

// XidSource says where an Xid was read.
type XidSource string

const (
	XidFromNVML   XidSource = ""       // an NVML event set
	XidFromKernel XidSource = "kernel" // a kernel log line
)

// GPUName names the GPU of the Xid as well as NVML did: "GPU 3
// (00000000:83:00.0)", "GPU 3", "GPU 00000000:83:00.0", or "a GPU NVML did
// not name". The bus id is not sanitised.
func (x Xid) GPUName() string {
	switch {
	case x.Index >= 0 && x.BusID != "":
		return "GPU " + strconv.Itoa(x.Index) + " (" + x.BusID + ")"
	case x.Index >= 0:
		return "GPU " + strconv.Itoa(x.Index)
	case x.BusID != "":
		return "GPU " + x.BusID
	}
	return "a GPU NVML did not name"
}

// GPUSourceMode names how GPU samples are read.
type GPUSourceMode string

const (
	// SourceNvidiaSMI: one long-lived `nvidia-smi --query-gpu … -lms` stream.
	SourceNvidiaSMI GPUSourceMode = "nvidia-smi"
	// SourceNVML: NVML in this process (flightdeck runs on the GPU host).
	SourceNVML GPUSourceMode = "nvml"
	// SourceAgent: NVML in `flightdeck agent` on the GPU host, streaming
	// JSON Lines over one SSH session.
	SourceAgent GPUSourceMode = "agent"
)

// GPUSource says how GPU samples are read now, and, when that is the
// nvidia-smi fallback, why NVML is not used. It is published when sampling
// starts and whenever the mode changes. It is an event payload.
type GPUSource struct {
	Mode GPUSourceMode
	// Detail is what the header may add: "NVML 12.550.54.15, driver
	// 550.54.15", "agent 0.8.0 (uploaded)". Sanitised.
	Detail string
	// Fallback, when Mode is SourceNvidiaSMI, says why NVML or the agent
	// is not used: "this build has no cgo", "host is linux/arm64, this
	// binary linux/amd64", "NVML init failed: ERROR_LIBRARY_NOT_FOUND",
	// "upload refused: …", "agent exited: …". Empty when nvidia-smi was
	// asked for. Sanitised, at most a few hundred bytes.
	Fallback string
}

// ComputeApp is one row of nvidia-smi --query-compute-apps (driver ≥ 450). A field
// the query did not ask for has Status Absent.
type ComputeApp struct {
	// PID is the process id, > 0 when PIDStatus is OK. It is 0 when
	// nvidia-smi could not give it (PIDStatus says why: "[Not Supported]"
	// in containers and on old drivers, "[N/A]"); 0 is never a real pid.
	PID       int
	PIDStatus CellStatus
	Name      Text    // process_name, sanitised for the terminal
	UsedMiB   Reading // used_memory / used_gpu_memory, MiB
	BusID     Text    // gpu_bus_id as printed, "00000000:18:00.0"; compare with SameBus
	UUID      Text    // gpu_uuid; with MIG on, the parent GPU's
}
