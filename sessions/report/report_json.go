package report

import (
	"encoding/json"
	"io"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// ReportFormat is the "format" value of WriteJSON's document; its field
// names are stable (ReportVersion changes if one ever must).
const (
	ReportFormat  = "flightdeck-report"
	ReportVersion = 1
)

// JSONReport is WriteJSON's document.
type JSONReport struct {
	Format    string              `json:"format"`  // ReportFormat
	Version   int                 `json:"version"` // ReportVersion
	Header    event.SessionHeader `json:"header"`
	End       time.Time           `json:"end"`        // the last event's time
	DurationS float64             `json:"duration_s"` // End - Header.Created, seconds
	// Live says the journal was still being written: an open experiment
	// is open, not ended by a crash.
	Live     bool   `json:"live"`
	Baseline string `json:"baseline,omitempty"` // id of the experiment deltas are relative to
	// BaselineMarked says Baseline is the experiment marked as the
	// baseline in the cockpit (exp-baseline), not the default.
	BaselineMarked bool             `json:"baseline_marked,omitempty"`
	Experiments    []JSONExperiment `json:"experiments"`
	Notes          []JSONNote       `json:"notes"` // every note, in time order
	// RepoChanges are the checkout's moves (Report.RepoChanges).
	RepoChanges []JSONRepoChange `json:"repo_changes"`
	// Sessions are the cockpit sessions that appended to the journal
	// after the one that created it (Report.Sessions); absent when none.
	Sessions []JSONSession `json:"sessions,omitempty"`
	// GPUEvents are the Xids and sampling-path changes
	// (Report.GPUEvents); absent when none.
	GPUEvents []JSONGPUEvent `json:"gpu_events,omitempty"`
	// Orphans are the experiments whose exp-start line the journal lacks
	// (garbled or lost), with what their other records kept
	// (ledger.Orphans); absent when none. They are not in Experiments.
	Orphans []JSONOrphan `json:"orphans,omitempty"`
}

// JSONOrphan is one ledger.Orphan.
type JSONOrphan struct {
	ID      string   `json:"id"`
	Records []string `json:"records"` // the kinds of its records, in order of first appearance
	FirstS  float64  `json:"first_s"` // its first record, seconds since the journal began
	Commit  string   `json:"commit,omitempty"`
	Profile string   `json:"profile,omitempty"`
	// EndedBy, EndedS and Result are its exp-end's, absent without one.
	EndedBy event.Trigger           `json:"ended_by,omitempty"`
	EndedS  *float64                `json:"ended_s,omitempty"`
	Result  *event.ExperimentResult `json:"result,omitempty"`
}

// JSONGPUEvent is one GPUEvent.
type JSONGPUEvent struct {
	At    time.Time `json:"at"`
	T     float64   `json:"t_s"`
	Exp   string    `json:"exp,omitempty"`
	What  string    `json:"what"`
	Count int       `json:"count"`
	// LastT is the last occurrence's time (seconds) when Count > 1.
	LastT    float64 `json:"last_t_s,omitempty"`
	Xid      uint64  `json:"xid,omitempty"`
	Critical bool    `json:"critical,omitempty"`
}

// JSONSession is one SessionStart.
type JSONSession struct {
	At     time.Time           `json:"at"`
	T      float64             `json:"t_s"`
	Header event.SessionHeader `json:"header"` // the session's header
	// Crashed is the experiment the previous session left open, ended at
	// its last event; absent when none.
	Crashed string `json:"crashed,omitempty"`
}

// JSONRepoChange is one RepoChange.
type JSONRepoChange struct {
	At   time.Time `json:"at"`
	T    float64   `json:"t_s"`
	What string    `json:"what"`
}

// JSONExperiment is one experiment of a JSONReport. Times are RFC 3339;
// *_s fields are seconds since the journal's start.
type JSONExperiment struct {
	ID         string        `json:"id"`
	Name       string        `json:"name"`
	Hypothesis string        `json:"hypothesis,omitempty"`
	Conclusion string        `json:"conclusion,omitempty"`
	Started    time.Time     `json:"started"`
	StartedS   float64       `json:"started_s"`
	Ended      *time.Time    `json:"ended,omitempty"` // absent while open
	EndedS     *float64      `json:"ended_s,omitempty"`
	StartedBy  event.Trigger `json:"started_by"`
	// EndedBy is the trigger, "" while open or when no end was recorded
	// (see EndedHow).
	EndedBy  event.Trigger `json:"ended_by,omitempty"`
	EndedHow string        `json:"ended_how"` // EndedHow: "relaunch", "open", "crash", …
	Commit   string        `json:"commit,omitempty"`
	// CommitUnknown says why the commit is not known (Experiment.
	// CommitUnknown): "no fingerprint captured", "git: timed out after
	// 30s"; absent when it is known or no repository was configured.
	CommitUnknown string `json:"commit_unknown,omitempty"`
	Profile       string `json:"profile,omitempty"`
	// Launch is the launch that started it, env secrets redacted.
	Launch      *event.LaunchInfo      `json:"launch,omitempty"`
	Fingerprint *JSONFingerprint       `json:"fingerprint,omitempty"`
	Result      event.ExperimentResult `json:"result"`
	// DeltaPct is the median's change against the baseline, in percent;
	// absent for the baseline itself and when either has no result.
	DeltaPct *float64 `json:"delta_pct,omitempty"`
	// Verdict is the across-launch verdict of its server-log tok/s
	// against the baseline (Report.VerdictVs); absent for the baseline
	// itself and without one.
	Verdict *JSONVerdict `json:"verdict,omitempty"`
	EndGPUs []GPUState   `json:"end_gpus,omitempty"`
	Notes   []JSONNote   `json:"notes,omitempty"`
	// Bench are the benchmark runs recorded for it, in time order
	// (failed ones with err).
	Bench []JSONBenchRun `json:"bench,omitempty"`
	// Repeat is set when it is one launch of a repeat (R).
	Repeat *event.Repeat `json:"repeat,omitempty"`
	// Xids are the Xids reported while it ran, and the critical ones
	// earlier in the same cockpit session (Report.ExpXids; before: true):
	// a result measured on a GPU that needs a reset is suspect.
	Xids []JSONExpXid `json:"xids,omitempty"`
}

// JSONExpXid is one of an experiment's Xids.
type JSONExpXid struct {
	T        float64 `json:"t_s"` // seconds since the journal's start
	GPU      int     `json:"gpu"` // NVML index, -1 when the event named none
	BusID    string  `json:"bus_id,omitempty"`
	Xid      uint64  `json:"xid"`
	Count    int     `json:"count"`
	Critical bool    `json:"critical,omitempty"`
	Before   bool    `json:"before,omitempty"` // reported before the experiment started
	What     string  `json:"what"`
}

// JSONFingerprint is a Fingerprint with the GPUs as flat GPUStates.
type JSONFingerprint struct {
	At          time.Time         `json:"at"`
	Hostname    string            `json:"hostname,omitempty"`
	Kernel      string            `json:"kernel,omitempty"`
	Git         *event.GitState   `json:"git,omitempty"`
	Launch      *event.LaunchInfo `json:"launch,omitempty"`
	CommandLine string            `json:"command_line,omitempty"`
	Versions    []event.Version   `json:"versions,omitempty"`
	GPUs        []GPUState        `json:"gpus,omitempty"`
	Errors      []string          `json:"errors,omitempty"`
}

// JSONNote is a note with its time.
type JSONNote struct {
	At   time.Time `json:"at"`
	T    float64   `json:"t_s"`
	Exp  string    `json:"exp,omitempty"`
	Text string    `json:"text"`
}

// GPUState is one GPU's state as the exports give it: numbers are null
// when nvidia-smi gave no value ([N/A], [Not Supported], lost), never 0.
type GPUState struct {
	Index       int      `json:"index"`
	Name        string   `json:"name,omitempty"`
	BusID       string   `json:"bus_id,omitempty"`
	UtilPct     *float64 `json:"util_pct"`
	MemUsedMiB  *float64 `json:"mem_used_mib"`
	MemTotalMiB *float64 `json:"mem_total_mib"`
	PowerW      *float64 `json:"power_w"`
	TempC       *float64 `json:"temp_c"`
	SMMHz       *float64 `json:"sm_mhz"`
	MemMHz      *float64 `json:"mem_mhz"`
	PState      string   `json:"pstate,omitempty"`
	PCIeGen     *float64 `json:"pcie_gen"`
	PCIeWidth   *float64 `json:"pcie_width"`
	PCIeGenMax  *float64 `json:"pcie_gen_max"`
	PCIeWidMax  *float64 `json:"pcie_width_max"`
	// Throttle names the active clock-event reasons ("idle", "sw-power",
	// …); empty for none, null when not read.
	Throttle    []string `json:"throttle"`
	Persistence string   `json:"persistence,omitempty"`
	ECC         string   `json:"ecc,omitempty"`
	Lost        bool     `json:"lost,omitempty"`
}

// GPUStates converts GPUs to their flat export form.
func GPUStates(gpus []event.GPU) []GPUState {
	if len(gpus) == 0 {
		return nil
	}
	out := make([]GPUState, len(gpus))
	for i := range gpus {
		g := &gpus[i]
		s := GPUState{
			Index: g.Index, Name: okText(g.Name), BusID: okText(g.BusID),
			UtilPct: val(g.UtilGPUPct), MemUsedMiB: val(g.MemUsedMiB), MemTotalMiB: val(g.MemTotalMiB),
			PowerW: val(g.PowerDrawW), TempC: val(g.TempC), SMMHz: val(g.SMClockMHz), MemMHz: val(g.MemClockMHz),
			PState: okText(g.PState), PCIeGen: val(g.PCIeGenCurrent), PCIeWidth: val(g.PCIeWidthCurrent),
			PCIeGenMax: val(g.PCIeGenMax), PCIeWidMax: val(g.PCIeWidthMax),
			Persistence: okText(g.Persistence), ECC: okText(g.ECCMode), Lost: g.Lost,
		}
		if names, ok := compare.ThrottleReasons(g.ClockEvents); ok {
			s.Throttle = append([]string{}, names...)
		}
		out[i] = s
	}
	return out
}

func val(r event.Reading) *float64 {
	if !r.Valid() {
		return nil
	}
	v := r.Value
	return &v
}

func okText(t event.Text) string {
	if t.Status != event.CellOK {
		return ""
	}
	return t.S
}

// BuildJSON returns r as a JSONReport with deltas against the baseline
// (opts.Baseline; see Report.Baseline). It returns an error for an unknown
// baseline.
func BuildJSON(r *Report, opts ReportOptions) (*JSONReport, error) {
	base, err := r.Baseline(opts.Baseline)
	if err != nil {
		return nil, err
	}
	start := r.Header.Created
	secs := func(t time.Time) float64 { return t.Sub(start).Seconds() }
	doc := &JSONReport{Format: ReportFormat, Version: ReportVersion, Header: r.Header, End: r.End,
		DurationS: r.Duration().Seconds(), Live: r.Live, Experiments: []JSONExperiment{}, Notes: []JSONNote{}}
	if base != nil {
		doc.Baseline = base.ID
		doc.BaselineMarked = opts.Baseline == "" && r.Ledger.Baseline() == base
	}
	doc.RepoChanges = []JSONRepoChange{}
	for _, c := range r.RepoChanges {
		doc.RepoChanges = append(doc.RepoChanges, JSONRepoChange{At: c.At, T: secs(c.At), What: c.What})
	}
	for _, g := range r.GPUEvents {
		e := JSONGPUEvent{At: g.At, T: secs(g.At), Exp: g.Exp, What: g.What, Count: g.Count, Xid: g.Xid, Critical: g.Critical}
		if g.Count > 1 {
			e.LastT = secs(g.Last)
		}
		doc.GPUEvents = append(doc.GPUEvents, e)
	}
	for _, ss := range r.Sessions {
		doc.Sessions = append(doc.Sessions, JSONSession{At: ss.At, T: secs(ss.At), Header: ss.Session.SessionHeader, Crashed: ss.Crashed})
	}
	note := func(n ledger.TimedNote) JSONNote { return JSONNote{At: n.At, T: secs(n.At), Exp: n.Exp, Text: n.Text} }
	for _, n := range r.Ledger.Notes() {
		doc.Notes = append(doc.Notes, note(n))
	}
	for _, o := range r.Ledger.Orphans() {
		j := JSONOrphan{ID: o.ID, Records: o.Records, FirstS: secs(o.First), Commit: o.Commit(), Profile: o.Profile()}
		if !o.Open() {
			s, res := secs(o.Ended), o.Result
			j.EndedBy, j.EndedS, j.Result = o.EndedBy, &s, &res
		}
		doc.Orphans = append(doc.Orphans, j)
	}
	exps := r.Ledger.Experiments()
	for i := range exps {
		x := &exps[i]
		j := JSONExperiment{ID: x.ID, Name: x.Name, Hypothesis: x.Hypothesis, Conclusion: x.Conclusion,
			Started: x.Started, StartedS: secs(x.Started), StartedBy: x.StartedBy, EndedBy: x.EndedBy,
			EndedHow: EndedHow(x), Commit: x.Commit(), CommitUnknown: x.CommitUnknown(), Profile: x.Profile(), Launch: redactLaunch(x.Launch),
			Result: x.Result, EndGPUs: GPUStates(x.EndGPUs)}
		if !x.Open() {
			t, s := x.Ended, secs(x.Ended)
			j.Ended, j.EndedS = &t, &s
		}
		if base != nil && base.ID != x.ID {
			if p, ok := compare.DeltaPct(x, base); ok {
				j.DeltaPct = &p
			}
			if row := r.VerdictVs(base, x); row != nil {
				v := BuildVerdictJSON(row)
				j.Verdict = &v
			}
		}
		if fp := x.Fingerprint; fp != nil {
			j.Fingerprint = &JSONFingerprint{At: fp.At, Hostname: fp.Hostname, Kernel: fp.Kernel, Git: fp.Git,
				Launch: redactLaunch(fp.Launch), CommandLine: fp.CommandLine, Versions: fp.Versions,
				GPUs: GPUStates(fp.GPUs), Errors: fp.Errors}
		}
		for _, n := range x.Notes {
			j.Notes = append(j.Notes, note(n))
		}
		for _, d := range x.Bench {
			j.Bench = append(j.Bench, benchRunJSON(d))
		}
		j.Repeat = x.Repeat
		for _, g := range r.ExpXids(x.ID) {
			j.Xids = append(j.Xids, JSONExpXid{T: secs(g.At), GPU: g.xid.Index, BusID: sanitize.OneLine(g.xid.BusID), Xid: g.Xid,
				Count: g.Count, Critical: g.Critical, Before: g.Before(x.ID), What: g.What})
		}
		doc.Experiments = append(doc.Experiments, j)
	}
	return doc, nil
}

// redactLaunch returns a copy of l with secret env values and argv flag
// values redacted again (a journal written by another tool may not have).
func redactLaunch(l *event.LaunchInfo) *event.LaunchInfo {
	if l == nil {
		return nil
	}
	c := server.RedactLaunch(*l)
	return &c
}

// WriteJSON writes r as one indented JSON document (JSONReport): header,
// experiments with fingerprint, result and delta against the baseline,
// and notes. Text is as recorded (JSON escapes control characters). It
// returns an error for an unknown opts.Baseline, or w's error.
func WriteJSON(w io.Writer, r *Report, opts ReportOptions) error {
	doc, err := BuildJSON(r, opts)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
