// Package agent is `flightdeck agent`'s wire protocol and the cockpit's
// side of it: the agent samples NVML on the GPU host and streams JSON Lines
// over one SSH session, so that no process is spawned per sample (issue 8).
//
// # Protocol (version 1)
//
// The agent writes JSON Lines on its stdout: one object a line, UTF-8, "\n"
// after each, flushed after every line. Every object has "t", its type. The
// first line is the hello, or the unavailable line and exit status 3:
//
//	{"t":"hello","v":1,"version":"0.8.0","driver":"550.54.15","nvml":"12.550.54.15","cuda":12040,"gpus":8,"interval_ms":1000}
//	{"t":"unavailable","v":1,"reason":"NVML init failed: ERROR_LIBRARY_NOT_FOUND","code":12}
//
// "v" is the protocol version; a reader refuses a hello or unavailable line
// whose "v" is newer than ProtocolVersion (a *VersionError). "cuda" is the
// CUDA driver version as NVML gives it (12040 for 12.4, 0 when unknown),
// "code" the nvmlReturn_t of the failed call (0 when none failed). A hello
// has "simulated":true when the agent samples the simulated host's fake
// NVML. Before it, the cockpit's launcher script writes
// {"t":"launch","pid":4242}: the process id of the agent it execs.
//
// Then, until the agent ends, the events its NVML sampler publishes:
//
//	{"t":"sample","at":1712345678123456789,"gpus":[{"index":0,"name":"NVIDIA H200",…},…],"missing":[3],"apps":[…]}
//	{"t":"xid","at":…,"index":2,"uuid":"GPU-…","pci_bus_id":"00000000:83:00.0","code":79}
//	{"t":"failure","at":…,"class":"gpu-lost","pci_bus_id":"…","reason":"…","needs_reboot":true,"nvml_version":"…","line":"…"}
//	{"t":"stale","at":…,"last_sample":…,"missed":3,"reason":"…"}
//	{"t":"alive","at":…}
//
// A read blocked in NVML is reported with a stale line after 2 intervals
// and every interval after; an alive line (a heartbeat from a goroutine
// that never calls NVML) follows any 1.5 intervals without a line. So a
// live agent writes at least every 2 intervals, and one whose session
// closed learns it at its next write.
//
// Times ("at", "last_sample") are Unix nanoseconds on the agent's clock
// ([seconds, nanoseconds] for a time outside 1678–2262); a zero time is
// left out.
// A sample's GPU object has "index" and one key per event.GPU field, named
// with its unit: name, pci_bus_id, uuid, util_gpu_pct, util_mem_pct,
// mem_used_mib, mem_total_mib, power_draw_w, power_limit_w, temp_c,
// sm_clock_mhz, mem_clock_mhz, sm_clock_max_mhz, fan_speed_pct, pstate,
// pcie_gen_current, pcie_gen_max, pcie_width_current, pcie_width_max,
// clock_events, persistence_mode, ecc_mode, mig_mode, lost, pcie_rx_kbs,
// pcie_tx_kbs. A key left out is a field that was not read (Status
// Absent). The values keep every non-value state distinct:
//
//   - a Reading is a JSON number when it holds a value; otherwise the
//     literal token string nvidia-smi would print, "[N/A]", "N/A", "[Not
//     Supported]", "[Unknown Error]", "[GPU is lost]", "ERR!", "[Requested
//     functionality has been deprecated]", another bracketed token, "" for
//     an empty cell, or the garbled text of an Invalid cell: the reader
//     rebuilds the exact Status and Raw from the string;
//   - a Text (name, P-state, modes) is its string, which reads back as OK
//     unless it is one of those tokens;
//   - clock_events is the event-reason bitmask as a number, or a token;
//   - lost is true or left out.
//
// A value that none of these forms can carry exactly (a Reading with both a
// value and a token, a Text whose status does not match its string, a
// non-finite number) is written as an object: {"status":N,"raw":"…",
// "value":x} for a Reading, {"status":N,"s":"…"} for a Text,
// {"status":N,"raw":"…","mask":M} for clock_events, with N the event.CellStatus
// number and x a number or "nan", "inf", "-inf". So decoding what
// AppendSample wrote gives back the same event.GPUSample, field for field (times
// compared with Equal; strings are written as valid UTF-8, each invalid
// byte becoming U+FFFD).
//
// The lines are encoding/json's (json.Marshal over the struct types of
// wire.go, so '<', '>', '&', U+2028 and U+2029 in strings are written as
// \u escapes). A sample line holds at most MaxGPUs GPU objects,
// MaxMissing indices and MaxApps processes; a reader refuses one beyond
// them, and one that repeats a key of the sample, GPU or process objects
// whose value is not a plain number or boolean (the agent never repeats a
// key), so that no line makes it allocate much more than MaxLineBytes.
//
// "missing" lists the indices of GPUs that sent no row this tick; "apps"
// the compute processes with their GPU memory, objects with "pid" (and
// "pid_status" when the PID could not be read), "name", "used_mib",
// "pci_bus_id", "uuid" in the same Reading/Text forms. "missing" and "apps"
// are left out when nil and written as [] when empty: Apps nil means the
// processes were not read, [] that there were none.
//
// Forward compatibility: a reader skips keys it does not know and lines
// whose "t" it does not know (Message.Kind KindUnknown). A line that is not
// a JSON object of this protocol is an error the Reader reports (a
// *LineError) before going on with the next line; it never panics.
//
// # The cockpit side
//
// Runner installs the agent on a host over SSH (nothing when the host has
// no libnvidia-ml.so.1; checking the cached copy's SHA-256, uploading this
// binary when the host's OS and architecture match, pruning versions
// unused for 14 days beyond the 3 newest), checks and starts it in one SSH
// session (what runs is what was checked) and publishes its events; it
// falls back to the nvidia-smi stream (gpu.Sampler), saying why in a
// event.GPUSource event, when the agent cannot run, exits, or falls silent for
// 3 intervals (then it is killed). After an exit or silence it retries the
// agent beside the fallback (30 s, doubling to 5 min) and switches back at
// the retried agent's first sample. An agent that reports NVML blocked
// (stale lines) is alive and kept.
package agent
