package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// csvTime is the CSV's time format: RFC 3339 in UTC with milliseconds,
// which pandas parses as datetime64 (pd.to_datetime) without a format.
const csvTime = "2006-01-02T15:04:05.000Z07:00"

// TokCSVHeader is the header row of WriteCSV.
var TokCSVHeader = []string{"t_s", "time", "exp", "name", "tok_s", "accept_length", "steady"}

// GPUCSVHeader is the header row of WriteGPUCSV.
var GPUCSVHeader = []string{"t_s", "time", "exp", "gpu", "util_pct", "mem_used_mib", "power_w", "temp_c",
	"sm_mhz", "mem_mhz", "pstate", "pcie_gen", "pcie_width", "throttle"}

// WriteCSV writes the tok/s series as CSV that pandas reads with no
// options (pd.read_csv(path)): one row per sample, columns TokCSVHeader —
// t_s (seconds since the journal's start, ms resolution), time (RFC 3339,
// UTC), exp and name (the experiment open then; empty when none), tok_s,
// accept_length (empty when the server reported none), steady (true when
// the sample is one of its experiment's steady-state samples, the ones
// its median is computed from). It returns w's error.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(TokCSVHeader); err != nil {
		return err
	}
	names := map[string]string{}
	for _, x := range r.Ledger.Experiments() {
		names[x.ID] = sanitize.OneLine(x.Name)
	}
	row := make([]string, len(TokCSVHeader))
	for _, s := range r.Rates {
		row[0], row[1] = csvT(s.At, r.Header.Created), s.At.UTC().Format(csvTime)
		row[2], row[3] = s.Exp, names[s.Exp]
		row[4] = strconv.FormatFloat(s.TokPerSec, 'f', -1, 64)
		row[5] = ""
		if s.HasAccept {
			row[5] = strconv.FormatFloat(s.AcceptLength, 'f', -1, 64)
		}
		row[6] = strconv.FormatBool(s.Steady)
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteGPUCSV writes every GPU sample of a journal (h its header, scan its
// events) as CSV that pandas reads with no options: one row per GPU per
// sample, columns GPUCSVHeader — t_s, time and exp as in WriteCSV, gpu
// (the nvidia-smi index), util_pct, mem_used_mib, power_w, temp_c, sm_mhz,
// mem_mhz, pstate ("P0"), pcie_gen, pcie_width, throttle (the active
// clock-event reasons joined by "+", "none" for none). A value nvidia-smi
// could not give ([N/A], [Not Supported], a lost GPU) is an empty cell,
// never 0. GPUs missing from a sample have no row. It streams: memory does
// not grow with the journal. It returns scan's or w's error.
func WriteGPUCSV(w io.Writer, h event.SessionHeader, scan ScanFunc) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(GPUCSVHeader); err != nil {
		return err
	}
	// Which experiment is open: starts and ends are folded; a new session
	// ends what a crashed one left open (as the Ledger does).
	var open string
	row := make([]string, len(GPUCSVHeader))
	err := scan(func(e event.Event) error {
		switch p := e.Data.(type) {
		case event.ExperimentStart:
			open = p.ID
		case event.ExperimentEnd:
			if p.Exp == open {
				open = ""
			}
		case event.Session:
			open = ""
		case event.GPUSample:
			for i := range p.GPUs {
				g := &p.GPUs[i]
				row[0], row[1], row[2] = csvT(e.At, h.Created), e.At.UTC().Format(csvTime), open
				row[3] = strconv.Itoa(g.Index)
				row[4] = csvReading(g.UtilGPUPct)
				row[5] = csvReading(g.MemUsedMiB)
				row[6] = csvReading(g.PowerDrawW)
				row[7] = csvReading(g.TempC)
				row[8] = csvReading(g.SMClockMHz)
				row[9] = csvReading(g.MemClockMHz)
				row[10] = ""
				if g.PState.Status == event.CellOK {
					row[10] = sanitize.OneLine(g.PState.S)
				}
				row[11] = csvReading(g.PCIeGenCurrent)
				row[12] = csvReading(g.PCIeWidthCurrent)
				row[13] = ""
				if names, ok := compare.ThrottleReasons(g.ClockEvents); ok {
					row[13] = "none"
					if len(names) > 0 {
						row[13] = strings.Join(names, "+")
					}
				}
				if err := cw.Write(row); err != nil {
					return err
				}
			}
		case event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
			event.ConnState, event.DriverState, event.HostChanges, event.HostState, event.ExperimentFingerprint, event.ExperimentUpdate,
			event.GPUFailure, event.GPUSource, event.GPUStale, event.GitAction, event.GitMoved,
			event.GitStatus, event.JournalStatus, event.Key, event.KillStep, event.LogBench,
			event.LogFollowError, event.LogLines, event.LogNotice, event.LogReset, event.Note,
			event.Prefill, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead, event.RepoUnreadable,
			event.ServerFailure, event.ServerHealthy, event.ServerLaunched, event.ServerObserved,
			event.ServerReady, event.ServerStatus, event.SpecDecode, event.Throughput, event.TokRate,
			event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
			// not a GPU row
		}
		return nil
	})
	if err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// csvT is seconds since start with millisecond resolution.
func csvT(at, start time.Time) string {
	return strconv.FormatFloat(float64(at.Sub(start).Round(time.Millisecond))/float64(time.Second), 'f', -1, 64)
}

// csvReading is the value, or "" for a non-value.
func csvReading(r event.Reading) string {
	if !r.Valid() {
		return ""
	}
	return strconv.FormatFloat(r.Value, 'f', -1, 64)
}
