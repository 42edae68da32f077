package event

// Kind names a payload kind: its row of the kind table. The zero Kind is
// no kind (an unknown record type in a journal).
type Kind uint8

// The kinds, in the journal codec's table order (screen-only kinds last).
// Adding one: declare its payload type in this package, give it a
// constant here, a row in kinds, and its Kind and sealed methods below;
// go-check-sumtype (make test) then names every type switch over Payload
// that must handle it, and the journal's tests ask for its codec.
const (
	KindGPUSample Kind = iota + 1
	KindGPUFailure
	KindGPUStale
	KindXid
	KindGPUSource
	KindLogLines
	KindLogReset
	KindLogNotice
	KindLogFollowError
	KindThroughput
	KindTokRate
	KindPrefill
	KindSpecDecode
	KindLogBench
	KindServerReady
	KindServerFailure
	KindServerStatus
	KindServerLaunched
	KindServerObserved
	KindServerHealthy
	KindKillStep
	KindRepoHead
	KindRepoUnreadable
	KindGitStatus
	KindGitAction
	KindGitMoved
	KindConnState
	KindNote
	KindExperimentStart
	KindExperimentFingerprint
	KindExperimentUpdate
	KindExperimentEnd
	KindKey
	KindSession
	KindBaseline
	KindRepeat
	KindBenchStarted
	KindBenchDone
	KindDriverState
	KindHostState
	KindHostChanges
	KindBisectStart
	KindBisectLaunch
	KindBisectEnd
	KindEngineSample
	KindEngineEndpoint
	KindTopology
	KindNCCL
	KindKernelLog
	KindJournalStatus
	KindBenchProgress
	KindRepeatProgress
	KindBisectProgress
	KindHistory

	numKinds = iota + 1 // one past the last kind (NumKinds)
)

// NumKinds is one more than the largest Kind: an array [NumKinds]T holds
// one T per kind, indexed by it.
const NumKinds = int(numKinds)

// CatchRule says which events of a kind before a time t the screen at t
// depends on: how a journal seek (journal.CatchUp) picks them, read from
// the cockpit's model and the experiment ledger it feeds.
type CatchRule uint8

const (
	CatchIgnore     CatchRule = iota // the screen never shows it
	CatchLatest                      // only the last one matters
	CatchAll                         // every one (rare kinds, or each one counts)
	CatchGPUSample                   // the last sample holding each GPU index, and the last sample
	CatchGPUFailure                  // the failures no sample has cleared yet
	CatchLog                         // the log window
	CatchLogReset                    // every one, each a line of the log window: log-reset (server phase, tok/s runs, experiment runs)
	CatchXid                         // every one (the GPU rows), each at most one line of the log window: gpu-xid
	CatchLogMark                     // every one, its text blanked before the log window
	CatchRate                        // the tok/s window, run starts, and open experiments' samples
)

// KindInfo is one row of the kind table: what every consumer of the stream
// needs to know of a kind.
type KindInfo struct {
	// Name is the kind's record type in a journal, kebab case
	// ("gpu-sample"); it never changes once released.
	Name string
	// ScreenOnly kinds are published for the screen only and never
	// journaled: the recorder's own state and the progress of runs whose
	// outcome is journaled (bench-done, exp-repeat).
	ScreenOnly bool
	// Urgent kinds are flushed and synced to the journal as soon as they
	// are written: what the user did and what a crash must not lose. A
	// gpu-xid forces at most one sync a second (the host may hang or
	// reboot next).
	Urgent bool
	// CatchUp is how a seek in a replay rebuilds the screen from the
	// events of this kind before the time sought.
	CatchUp CatchRule
}

// kinds is the kind table.
var kinds = [numKinds]KindInfo{
	// GPU rows keep each index's latest row (a missing GPU keeps its last
	// values); the latest sample decides which rows are missing and the
	// "last sample" time, and clears the stale marker.
	KindGPUSample: {Name: "gpu-sample", CatchUp: CatchGPUSample},
	// A failure stays in the banner (with a count of repeats) until a
	// sample clears it (any sample for a whole-host failure, a healthy
	// row of its bus otherwise); cleared ones leave nothing.
	KindGPUFailure: {Name: "gpu-failure", CatchUp: CatchGPUFailure},
	// Cleared by the next sample (the last sample is kept).
	KindGPUStale: {Name: "gpu-stale", CatchUp: CatchLatest},
	// An Xid marks its GPU's row (a critical one for the rest of the
	// session, the others until a server-launched or ten minutes of data
	// time after the GPU's latest: every Xid and launch decides it) and
	// is a line of the log ring, or, grouped with identical ones within a
	// second (decided by the Xids alone), adds to one: not a line the
	// log window can count on.
	KindXid: {Name: "gpu-xid", Urgent: true, CatchUp: CatchXid},
	// The header says how GPUs are sampled (the latest one), the GPU
	// table words what a sampler reported by the one in use when it came,
	// and a change of sampler is a line of the log ring: every one (a
	// few a session), not counted in the log window (like an Xid's).
	KindGPUSource: {Name: "gpu-source", CatchUp: CatchAll},
	// The log ring: the last lines and reset markers, with the
	// ready/failure highlights (journal.CatchUpLogLines).
	KindLogLines: {Name: "log-lines", CatchUp: CatchLog},
	KindLogReset: {Name: "log-reset", CatchUp: CatchLogReset},
	// The notice is cleared by the next lines; its path stays.
	KindLogNotice:      {Name: "log-notice", CatchUp: CatchAll},
	KindLogFollowError: {Name: "log-follow-error", CatchUp: CatchIgnore},
	KindThroughput:     {Name: "throughput", CatchUp: CatchIgnore}, // the screen uses tok-rate
	// The tok/s ring keeps journal.CatchUpRates points; the server phase
	// turns "running" at the first figure of a run; an experiment's
	// result is computed from every figure while it is open (or closed by
	// a new start without its end).
	KindTokRate:    {Name: "tok-rate", CatchUp: CatchRate},
	KindPrefill:    {Name: "prefill", CatchUp: CatchIgnore},
	KindSpecDecode: {Name: "spec-decode", CatchUp: CatchIgnore},
	KindLogBench:   {Name: "bench-result", CatchUp: CatchIgnore},
	// Server phase, failure tier, experiment run boundaries, and the log
	// line highlight (only meaningful inside the log window).
	KindServerReady:   {Name: "server-ready", CatchUp: CatchLogMark},
	KindServerFailure: {Name: "server-failure", CatchUp: CatchLogMark},
	// Rare and each one counts: run boundaries for the tok/s ring and the
	// experiments, the control overlay's state; a launch clears the GPU
	// rows' non-critical Xids.
	KindServerStatus:   {Name: "server-status", CatchUp: CatchAll},
	KindServerLaunched: {Name: "server-launched", Urgent: true, CatchUp: CatchAll},
	KindServerObserved: {Name: "server-observed", CatchUp: CatchIgnore},
	KindServerHealthy:  {Name: "server-healthy", CatchUp: CatchIgnore},
	KindKillStep:       {Name: "server-kill", Urgent: true, CatchUp: CatchIgnore},
	KindRepoHead:       {Name: "repo-head", CatchUp: CatchAll},          // header HEAD text and short id; each one, for the HEAD a launch ran (the server's code): published only when it changes
	KindRepoUnreadable: {Name: "repo-unreadable", CatchUp: CatchLatest}, // header HEAD text (the later of the two wins)
	KindGitStatus:      {Name: "git-status", CatchUp: CatchLatest},
	KindGitAction:      {Name: "git-action", Urgent: true, CatchUp: CatchLatest}, // the panel shows the last action
	KindGitMoved:       {Name: "git-moved", CatchUp: CatchAll},                   // the banner counts them
	KindConnState:      {Name: "conn-state", CatchUp: CatchAll},                  // the host name is the last non-empty one; few events
	// Experiments and notes: the ledger keeps them all.
	KindNote:                  {Name: "note", Urgent: true, CatchUp: CatchAll},
	KindExperimentStart:       {Name: "exp-start", Urgent: true, CatchUp: CatchAll},
	KindExperimentFingerprint: {Name: "exp-fingerprint", Urgent: true, CatchUp: CatchAll},
	KindExperimentUpdate:      {Name: "exp-update", Urgent: true, CatchUp: CatchAll},
	KindExperimentEnd:         {Name: "exp-end", Urgent: true, CatchUp: CatchAll},
	KindKey:                   {Name: "key", Urgent: true, CatchUp: CatchIgnore},
	KindSession:               {Name: "session", CatchUp: CatchAll}, // the ledger ends at it what a crashed session left open
	// The baseline mark: the latest one wins (it may clear the mark).
	KindBaseline: {Name: "exp-baseline", CatchUp: CatchLatest},
	// Repeat tags and finished benchmark runs: the ledger keeps each on
	// its experiment (few events, each one counts).
	KindRepeat: {Name: "exp-repeat", CatchUp: CatchAll},
	// Every run started: with the bench-done events they say whether a
	// run was going at t (its progress is never journaled), and which
	// tok/s samples the ledger leaves out of an experiment's result (those
	// while a benchmark ran).
	KindBenchStarted: {Name: "bench-start", CatchUp: CatchAll},
	KindBenchDone:    {Name: "bench-done", CatchUp: CatchAll},
	// Who drives the host: the header shows the latest role and holder.
	KindDriverState: {Name: "driver", Urgent: true, CatchUp: CatchLatest},
	// What the host was on connect and what changed since the last
	// session here: the banner shows the latest; a later session reads
	// the state back (few events).
	KindHostState:   {Name: "host-state", Urgent: true, CatchUp: CatchLatest},
	KindHostChanges: {Name: "host-changes", Urgent: true, CatchUp: CatchLatest},
	// A bisect: the panel folds every record of it (few events).
	KindBisectStart:  {Name: "bisect-start", Urgent: true, CatchUp: CatchAll},
	KindBisectLaunch: {Name: "bisect-launch", Urgent: true, CatchUp: CatchAll},
	KindBisectEnd:    {Name: "bisect-end", Urgent: true, CatchUp: CatchAll},
	// The engine line shows the latest scrape and the endpoint's state.
	KindEngineSample:   {Name: "engine-sample", CatchUp: CatchLatest},
	KindEngineEndpoint: {Name: "engine-endpoint", CatchUp: CatchLatest},
	// The topology view shows the latest (once per connection); NCCL's
	// account is the latest fold of the run's log; the kernel log's
	// state the latest.
	KindTopology:  {Name: "topology", CatchUp: CatchLatest},
	KindNCCL:      {Name: "nccl", CatchUp: CatchLatest},
	KindKernelLog: {Name: "kernel-log", CatchUp: CatchLatest},
	// Published for the screen only.
	KindJournalStatus:  {Name: "journal-status", ScreenOnly: true},
	KindBenchProgress:  {Name: "bench-progress", ScreenOnly: true},
	KindRepeatProgress: {Name: "repeat-progress", ScreenOnly: true},
	KindBisectProgress: {Name: "bisect-progress", ScreenOnly: true},
	// Derived from the host's other journals at session start: never
	// journaled (each is in its own file).
	KindHistory: {Name: "history", ScreenOnly: true},
}

// Info is k's row of the kind table; the zero KindInfo for no kind.
func (k Kind) Info() KindInfo {
	if k >= numKinds {
		return KindInfo{}
	}
	return kinds[k]
}

// String is k's name ("gpu-sample"), "" for no kind.
func (k Kind) String() string { return k.Info().Name }

// Kinds lists every kind in table order.
func Kinds() []Kind {
	out := make([]Kind, 0, numKinds-1)
	for k := Kind(1); k < numKinds; k++ {
		out = append(out, k)
	}
	return out
}

// kindByName maps names to kinds (KindNamed).
var kindByName = func() map[string]Kind {
	m := make(map[string]Kind, numKinds)
	for k := Kind(1); k < numKinds; k++ {
		m[kinds[k].Name] = k
	}
	return m
}()

// KindNamed is the kind called name (a journal's record type); false for
// a name no kind has.
func KindNamed(name string) (Kind, bool) {
	k, ok := kindByName[name]
	return k, ok
}

// Each payload type's Kind, and the method that seals Payload to the types
// of this package.

func (GPUSample) Kind() Kind             { return KindGPUSample }
func (GPUFailure) Kind() Kind            { return KindGPUFailure }
func (GPUStale) Kind() Kind              { return KindGPUStale }
func (Xid) Kind() Kind                   { return KindXid }
func (GPUSource) Kind() Kind             { return KindGPUSource }
func (LogLines) Kind() Kind              { return KindLogLines }
func (LogReset) Kind() Kind              { return KindLogReset }
func (LogNotice) Kind() Kind             { return KindLogNotice }
func (LogFollowError) Kind() Kind        { return KindLogFollowError }
func (Throughput) Kind() Kind            { return KindThroughput }
func (TokRate) Kind() Kind               { return KindTokRate }
func (Prefill) Kind() Kind               { return KindPrefill }
func (SpecDecode) Kind() Kind            { return KindSpecDecode }
func (LogBench) Kind() Kind              { return KindLogBench }
func (ServerReady) Kind() Kind           { return KindServerReady }
func (ServerFailure) Kind() Kind         { return KindServerFailure }
func (ServerStatus) Kind() Kind          { return KindServerStatus }
func (ServerLaunched) Kind() Kind        { return KindServerLaunched }
func (ServerObserved) Kind() Kind        { return KindServerObserved }
func (ServerHealthy) Kind() Kind         { return KindServerHealthy }
func (KillStep) Kind() Kind              { return KindKillStep }
func (RepoHead) Kind() Kind              { return KindRepoHead }
func (RepoUnreadable) Kind() Kind        { return KindRepoUnreadable }
func (GitStatus) Kind() Kind             { return KindGitStatus }
func (GitAction) Kind() Kind             { return KindGitAction }
func (GitMoved) Kind() Kind              { return KindGitMoved }
func (ConnState) Kind() Kind             { return KindConnState }
func (Note) Kind() Kind                  { return KindNote }
func (ExperimentStart) Kind() Kind       { return KindExperimentStart }
func (ExperimentFingerprint) Kind() Kind { return KindExperimentFingerprint }
func (ExperimentUpdate) Kind() Kind      { return KindExperimentUpdate }
func (ExperimentEnd) Kind() Kind         { return KindExperimentEnd }
func (Key) Kind() Kind                   { return KindKey }
func (Session) Kind() Kind               { return KindSession }
func (Baseline) Kind() Kind              { return KindBaseline }
func (Repeat) Kind() Kind                { return KindRepeat }
func (BenchStarted) Kind() Kind          { return KindBenchStarted }
func (BenchDone) Kind() Kind             { return KindBenchDone }
func (DriverState) Kind() Kind           { return KindDriverState }
func (HostState) Kind() Kind             { return KindHostState }
func (HostChanges) Kind() Kind           { return KindHostChanges }
func (JournalStatus) Kind() Kind         { return KindJournalStatus }
func (BenchProgress) Kind() Kind         { return KindBenchProgress }
func (RepeatProgress) Kind() Kind        { return KindRepeatProgress }
func (History) Kind() Kind               { return KindHistory }
func (BisectStart) Kind() Kind           { return KindBisectStart }
func (BisectLaunch) Kind() Kind          { return KindBisectLaunch }
func (BisectEnd) Kind() Kind             { return KindBisectEnd }
func (BisectProgress) Kind() Kind        { return KindBisectProgress }
func (EngineSample) Kind() Kind          { return KindEngineSample }
func (EngineEndpoint) Kind() Kind        { return KindEngineEndpoint }
func (Topology) Kind() Kind              { return KindTopology }
func (NCCL) Kind() Kind                  { return KindNCCL }
func (KernelLog) Kind() Kind             { return KindKernelLog }

func (GPUSample) sealed()             {}
func (GPUFailure) sealed()            {}
func (GPUStale) sealed()              {}
func (Xid) sealed()                   {}
func (GPUSource) sealed()             {}
func (LogLines) sealed()              {}
func (LogReset) sealed()              {}
func (LogNotice) sealed()             {}
func (LogFollowError) sealed()        {}
func (Throughput) sealed()            {}
func (TokRate) sealed()               {}
func (Prefill) sealed()               {}
func (SpecDecode) sealed()            {}
func (LogBench) sealed()              {}
func (ServerReady) sealed()           {}
func (ServerFailure) sealed()         {}
func (ServerStatus) sealed()          {}
func (ServerLaunched) sealed()        {}
func (ServerObserved) sealed()        {}
func (ServerHealthy) sealed()         {}
func (KillStep) sealed()              {}
func (RepoHead) sealed()              {}
func (RepoUnreadable) sealed()        {}
func (GitStatus) sealed()             {}
func (GitAction) sealed()             {}
func (GitMoved) sealed()              {}
func (ConnState) sealed()             {}
func (Note) sealed()                  {}
func (ExperimentStart) sealed()       {}
func (ExperimentFingerprint) sealed() {}
func (ExperimentUpdate) sealed()      {}
func (ExperimentEnd) sealed()         {}
func (Key) sealed()                   {}
func (Session) sealed()               {}
func (Baseline) sealed()              {}
func (Repeat) sealed()                {}
func (BenchStarted) sealed()          {}
func (BenchDone) sealed()             {}
func (DriverState) sealed()           {}
func (HostState) sealed()             {}
func (HostChanges) sealed()           {}
func (JournalStatus) sealed()         {}
func (BenchProgress) sealed()         {}
func (History) sealed()               {}
func (RepeatProgress) sealed()        {}
func (BisectStart) sealed()           {}
func (BisectLaunch) sealed()          {}
func (BisectEnd) sealed()             {}
func (BisectProgress) sealed()        {}
func (EngineSample) sealed()          {}
func (EngineEndpoint) sealed()        {}
func (Topology) sealed()              {}
func (NCCL) sealed()                  {}
func (KernelLog) sealed()             {}
