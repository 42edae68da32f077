package agent

import (
	"encoding/json"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The encoder is encoding/json's (json.Marshal: HTML-safe, strings as
// valid UTF-8) over the types of wire.go.

// appendLine appends v's JSON and "\n" to b.
func appendLine(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		// The wire types hold no value json.Marshal refuses: every float
		// is a reading's or a numOrWord, which write NaN and infinities
		// as strings.
		panic("agent: encoding a protocol line: " + err.Error())
	}
	b = append(b, j...)
	return append(b, '\n')
}

// AppendHello appends h as a hello line (with "v" = ProtocolVersion and
// the interval in whole milliseconds) and its "\n".
func AppendHello(b []byte, h Hello) []byte {
	return appendLine(b, helloJSON{T: "hello", V: ProtocolVersion, Version: wireString(h.Version),
		Driver: wireString(h.Driver), NVML: wireString(h.NVML), CUDA: wInt(h.CUDA), GPUs: wInt(h.GPUs),
		IntervalMS: wInt64(h.Interval.Milliseconds()), Simulated: wBool(h.Simulated)})
}

// AppendAlive appends a heartbeat line written at at and its "\n":
// {"t":"alive","at":1764400000123456789}.
func AppendAlive(b []byte, at time.Time) []byte {
	return appendLine(b, aliveJSON{T: "alive", At: wireTime{t: at}})
}

// AppendLaunch appends a launch line and its "\n": {"t":"launch","pid":4242}.
// The cockpit's launcher script writes the same with printf; this is for
// tests and other launchers.
func AppendLaunch(b []byte, l Launch) []byte {
	return appendLine(b, launchJSON{T: "launch", PID: wInt(l.PID)})
}

// AppendUnavailable appends u as an unavailable line (with "v" =
// ProtocolVersion) and its "\n".
func AppendUnavailable(b []byte, u Unavailable) []byte {
	return appendLine(b, unavailableJSON{T: "unavailable", V: ProtocolVersion, Reason: wireString(u.Reason), Code: wInt(u.Code)})
}

// AppendEvent appends the line for an event whose payload the protocol
// carries (event.GPUSample, event.Xid, event.GPUFailure, event.GPUStale) and reports true;
// for any other payload it returns b unchanged and false. A sample's time
// is Sample.At (the event's time when Sample.At is zero); the others carry
// the event's time.
func AppendEvent(b []byte, e event.Event) ([]byte, bool) {
	switch p := e.Data.(type) {
	case event.GPUSample:
		if p.At.IsZero() {
			p.At = e.At
		}
		return AppendSample(b, p), true
	case event.Xid:
		return AppendXid(b, e.At, p), true
	case event.GPUFailure:
		return AppendFailure(b, e.At, p), true
	case event.GPUStale:
		return AppendStale(b, e.At, p), true
	case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted, event.ConnState,
		event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd, event.ExperimentFingerprint, event.ExperimentStart,
		event.ExperimentUpdate, event.GPUSource, event.GitAction, event.GitMoved, event.GitStatus,
		event.JournalStatus, event.Key, event.KillStep, event.LogBench, event.LogFollowError,
		event.LogLines, event.LogNotice, event.LogReset, event.Note, event.Prefill, event.Repeat,
		event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable, event.ServerFailure,
		event.ServerHealthy, event.ServerLaunched, event.ServerObserved, event.ServerReady,
		event.ServerStatus, event.Session, event.SpecDecode, event.Throughput, event.TokRate, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
		// not in the agent protocol
	}
	return b, false
}

// AppendSample appends s as a sample line and its "\n" (see the package
// documentation for the format).
func AppendSample(b []byte, s event.GPUSample) []byte {
	out := sampleOut{T: "sample", At: wireTime{t: s.At}, Missing: s.Missing}
	if s.GPUs != nil {
		out.GPUs = make([]gpuJSON, len(s.GPUs))
		for i := range s.GPUs {
			out.GPUs[i] = gpuToJSON(&s.GPUs[i])
		}
	}
	if s.Apps != nil {
		out.Apps = make([]appJSON, len(s.Apps))
		for i := range s.Apps {
			out.Apps[i] = appToJSON(&s.Apps[i])
		}
	}
	return appendLine(b, out)
}

// AppendXid appends x, seen at at, as an xid line and its "\n".
func AppendXid(b []byte, at time.Time, x event.Xid) []byte {
	return appendLine(b, xidJSON{T: "xid", At: wireTime{t: at}, Index: wInt(x.Index), UUID: wireString(x.UUID),
		BusID: wireString(x.BusID), Code: wUint64(x.Code)})
}

// AppendFailure appends f, seen at at, as a failure line and its "\n".
func AppendFailure(b []byte, at time.Time, f event.GPUFailure) []byte {
	return appendLine(b, failureJSON{T: "failure", At: wireTime{t: at},
		Class: wireString(string(f.Class)), BusID: wireString(f.BusID),
		Reason: wireString(f.Reason), NeedsReboot: wBool(f.NeedsReboot), NVMLVersion: wireString(f.NVMLVersion),
		Line: wireString(f.Line)})
}

// AppendStale appends s, seen at at, as a stale line and its "\n".
func AppendStale(b []byte, at time.Time, s event.GPUStale) []byte {
	return appendLine(b, staleJSON{T: "stale", At: wireTime{t: at}, LastSample: wireTime{t: s.LastSample},
		Missed: wInt(s.Missed), Reason: wireString(s.Reason)})
}
