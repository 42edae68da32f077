package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Sampler streams per-GPU readings from one host. It probes the fields the
// driver supports once (`nvidia-smi --help-query-gpu`, with a deadline) and
// then keeps ONE long-lived
//
//	nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits -lms <ms>
//
// running, because starting nvidia-smi per sample costs seconds of driver
// initialisation on hosts without persistence mode.
//
// It emits, each with the time its data was read:
//   - event.GPUSample for every tick. nvidia-smi prints one row per GPU per tick with
//     no separator, so a tick ends when an index repeats, when every GPU seen
//     before has reported, or PartialFlush after its first row (so one GPU
//     that stops reporting does not hold back the others; it is listed in
//     GPUSample.Missing).
//   - event.GPUFailure for each whole-command failure line, on stdout or stderr.
//   - event.GPUStale whenever a stream attempt ends without data flowing: no sample
//     for StaleAfter intervals (the stream is then restarted), the process
//     exited, the connection dropped, the start or the probe failed. Restarts
//     back off from MinBackoff to MaxBackoff while no sample arrives and keep
//     going until the context ends.
//
// Set the exported fields before Run; the zero values take the defaults
// given. A Sampler remembers the probed field list across stream restarts
// and Run calls; it probes again only when a stream exits without printing
// a single row or failure message (e.g. nvidia-smi rejected a field after a
// driver change).
type Sampler struct {
	Host remote.Host

	Interval     time.Duration // between samples; default 1 s, at least 10 ms
	Program      string        // nvidia-smi path on the host; default "nvidia-smi"
	ProbeTimeout time.Duration // deadline of --help-query-gpu; default 10 s
	StartTimeout time.Duration // longest wait for a stream's first sample (driver init); default 15 s
	StaleAfter   int           // intervals without a sample before restarting; default 3
	PartialFlush time.Duration // how long a started tick waits for missing GPUs; default Interval/2
	MinBackoff   time.Duration // first wait before a restart; default 1 s
	MaxBackoff   time.Duration // longest wait between restarts; default 30 s
	Now          func() time.Time

	mu     sync.Mutex
	fields []string // probe result
}

// settings is a Sampler's configuration with defaults applied.
type settings struct {
	interval, probeTimeout, startTimeout, partial, minBackoff, maxBackoff time.Duration
	staleAfter                                                            int
	program                                                               string
	now                                                                   func() time.Time
}

func (s *Sampler) settings() settings {
	c := settings{
		interval: s.Interval, probeTimeout: s.ProbeTimeout, startTimeout: s.StartTimeout,
		partial: s.PartialFlush, minBackoff: s.MinBackoff, maxBackoff: s.MaxBackoff,
		staleAfter: s.StaleAfter, program: s.Program, now: s.Now,
	}
	if c.interval <= 0 {
		c.interval = time.Second
	}
	c.interval = max(c.interval, 10*time.Millisecond)
	if c.probeTimeout <= 0 {
		c.probeTimeout = 10 * time.Second
	}
	if c.startTimeout <= 0 {
		c.startTimeout = 15 * time.Second
	}
	if c.staleAfter <= 0 {
		c.staleAfter = 3
	}
	if c.partial <= 0 {
		c.partial = c.interval / 2
	}
	if c.minBackoff <= 0 {
		c.minBackoff = time.Second
	}
	if c.maxBackoff < c.minBackoff {
		c.maxBackoff = max(c.minBackoff, 30*time.Second)
	}
	if c.program == "" {
		c.program = "nvidia-smi"
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Run samples until ctx ends, then returns nil. It returns an error at once
// only when the Sampler cannot run at all (nil Host or sink, a program name
// that cannot be quoted). sink is called from Run's goroutine only.
func (s *Sampler) Run(ctx context.Context, sink event.Sink) error {
	if s.Host == nil {
		return errors.New("gpu: Sampler.Host is nil")
	}
	if sink == nil {
		return errors.New("gpu: Sampler.Run: nil sink")
	}
	c := s.settings()
	if _, err := remote.Command(c.program); err != nil {
		return err
	}
	r := &run{s: s, c: c, sink: sink, start: c.now()}
	backoff := c.minBackoff
	for ctx.Err() == nil {
		progressed := r.attempt(ctx)
		if ctx.Err() != nil {
			break
		}
		if progressed {
			backoff = c.minBackoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if !progressed {
			backoff = min(2*backoff, c.maxBackoff)
		}
	}
	return nil
}

// run is the state of one Run call that outlives stream restarts.
type run struct {
	s          *Sampler
	c          settings
	sink       event.Sink
	start      time.Time
	lastSample time.Time
	known      []int // sorted indices of every GPU seen in this run
}

func (r *run) emit(at time.Time, p event.Payload) { r.sink(event.Event{At: at, Data: p}) }

// stale reports that data stopped flowing, and why.
func (r *run) stale(reason string) {
	now := r.c.now()
	ref := r.lastSample
	if ref.IsZero() {
		ref = r.start
	}
	missed := max(0, int(now.Sub(ref)/r.c.interval))
	r.emit(now, event.GPUStale{LastSample: r.lastSample, Missed: missed, Reason: cleanText([]byte(reason), 300)})
}

// attempt probes the fields if needed, runs one stream until it ends, and
// reports whether it produced a sample.
func (r *run) attempt(ctx context.Context) bool {
	fields, ok := r.probe(ctx)
	if !ok {
		return false
	}
	p, err := NewParser(fields)
	if err != nil { // cannot happen: QueryFields puts index first
		r.forgetFields()
		r.stale(err.Error())
		return false
	}
	ms := strconv.FormatInt(r.c.interval.Milliseconds(), 10)
	cmd, err := remote.Command(r.c.program, "--query-gpu="+strings.Join(fields, ","),
		"--format=csv,noheader,nounits", "-lms", ms)
	if err != nil {
		r.stale(err.Error())
		return false
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	proc, err := r.s.Host.Start(sctx, cmd)
	if err != nil {
		if ctx.Err() == nil {
			r.stale("start nvidia-smi: " + err.Error())
		}
		return false
	}
	st := &stream{run: r, p: p, proc: proc}
	return st.loop(ctx)
}

func (r *run) forgetFields() {
	r.s.mu.Lock()
	r.s.fields = nil
	r.s.mu.Unlock()
}

// probe returns the query field list, running --help-query-gpu once.
func (r *run) probe(ctx context.Context) ([]string, bool) {
	r.s.mu.Lock()
	f := r.s.fields
	r.s.mu.Unlock()
	if f != nil {
		return f, true
	}
	cmd, err := remote.Command(r.c.program, "--help-query-gpu")
	if err != nil {
		r.stale(err.Error())
		return nil, false
	}
	pctx, cancel := context.WithTimeout(ctx, r.c.probeTimeout)
	res, err := r.s.Host.Run(pctx, cmd, nil)
	cancel()
	if ctx.Err() != nil {
		return nil, false
	}
	at := r.c.now()
	r.emitFailures(at, res.Stdout, res.Stderr)
	if f, ok := missingProgram(res, err); ok {
		r.emit(at, f)
	}
	supported, perr := ParseHelpQueryGPU(res.Stdout)
	if perr == nil {
		fields, qerr := QueryFields(supported)
		if qerr == nil {
			r.s.mu.Lock()
			r.s.fields = fields
			r.s.mu.Unlock()
			return fields, true
		}
		perr = qerr
	}
	if err == nil {
		err = perr
	}
	reason := "probe nvidia-smi --help-query-gpu: " + err.Error()
	if l := firstLine(res.Stderr, nil); l != "" {
		reason += ": " + l
	}
	r.stale(reason)
	return nil, false
}

// emitFailures emits every whole-command failure found in a finished
// command's output.
func (r *run) emitFailures(at time.Time, outs ...[]byte) {
	for _, f := range failuresIn(outs...) {
		r.emit(at, f)
	}
}

// failuresIn returns every whole-command failure found in a finished
// command's outputs, in order; a version mismatch carries the version from
// its "NVML library version" line when one follows.
func failuresIn(outs ...[]byte) []event.GPUFailure {
	var fs []event.GPUFailure
	for _, out := range outs {
		var pending *event.GPUFailure
		for len(out) > 0 {
			var line []byte
			line, out, _ = bytes.Cut(out, []byte{'\n'})
			if pending != nil {
				v, ok := ParseNVMLVersion(line)
				pending.NVMLVersion = v
				fs = append(fs, *pending)
				pending = nil
				if ok {
					continue
				}
			}
			if f, ok := ClassifyFailure(line); ok {
				if f.Class == event.GPUFailDriverLibraryMismatch {
					pending = &f
					continue
				}
				fs = append(fs, f)
			}
		}
		if pending != nil {
			fs = append(fs, *pending)
		}
	}
	return fs
}

// missingProgram reports a command the shell could not find (exit status
// 127, "sh: 1: nvidia-smi: not found") as a FailNoNVIDIASMI failure.
func missingProgram(res remote.Result, err error) (event.GPUFailure, bool) {
	var exit *remote.ExitError
	if !errors.As(err, &exit) || exit.Code != 127 {
		return event.GPUFailure{}, false
	}
	msg := firstLine(res.Stderr, exit.Stderr)
	return event.GPUFailure{Class: event.GPUFailNoNVIDIASMI, Reason: msg, Line: msg}, true
}

// firstLine returns the first non-blank line of the first non-empty
// output, sanitised.
func firstLine(outs ...[]byte) string {
	for _, out := range outs {
		for _, l := range bytes.Split(out, []byte{'\n'}) {
			if l = bytes.TrimSpace(l); len(l) > 0 {
				return cleanText(l, 200)
			}
		}
	}
	return ""
}

// lineMsg is one line of the stream's output and when it was read.
type lineMsg struct {
	b      []byte
	at     time.Time
	stderr bool
	long   bool
}

// stream is one running nvidia-smi loop.
type stream struct {
	run  *run
	p    *Parser
	proc remote.Process

	tick        []event.GPU       // rows of the tick being assembled
	tickAt      time.Time         // when its first row was read
	pending     *event.GPUFailure // a version mismatch waiting for its "NVML library version" line
	pendingAt   time.Time
	noise       string // the last output line that was neither a row nor a failure
	gotRows     bool
	sawFailure  bool
	progressed  bool
	partial     *time.Timer
	staleTimer  *time.Timer
	staleWindow time.Duration
}

// readerGrace bounds how long a finished stream waits for its reader
// goroutines after closing the process; a Process whose Close does not
// unblock its readers would otherwise hang the sampler.
const readerGrace = 5 * time.Second

// loop runs the stream until it exits, stalls or ctx ends, and reports
// whether it produced a sample.
func (st *stream) loop(ctx context.Context) bool {
	r, c := st.run, st.run.c
	lines := make(chan lineMsg, 64)
	done := make(chan struct{})
	exited := make(chan error, 1)
	var wg sync.WaitGroup
	read := func(rd io.Reader, stderr bool) {
		defer wg.Done()
		if rd == nil {
			return
		}
		lr := newLineReader(rd)
		for {
			b, long, err := lr.next()
			if err != nil {
				return
			}
			m := lineMsg{b: bytes.Clone(b), at: c.now(), stderr: stderr, long: long}
			select {
			case lines <- m:
			case <-done:
				return
			}
		}
	}
	wg.Add(2)
	go read(st.proc.Stdout(), false)
	go read(st.proc.Stderr(), true)
	// Wait only after both outputs are drained: some Process
	// implementations (os/exec pipes) close them in Wait.
	go func() {
		wg.Wait()
		exited <- st.proc.Wait()
	}()
	waited := false
	defer func() {
		close(done)
		st.proc.Close()
		if !waited {
			t := time.NewTimer(readerGrace)
			select {
			case <-exited:
			case <-t.C:
			}
			t.Stop()
		}
	}()

	st.staleWindow = time.Duration(c.staleAfter) * c.interval
	st.staleTimer = time.NewTimer(max(c.startTimeout, st.staleWindow))
	defer st.staleTimer.Stop()
	st.partial = time.NewTimer(time.Hour)
	st.partial.Stop()
	defer st.partial.Stop()

	for {
		select {
		case <-ctx.Done():
			return st.progressed
		case m := <-lines:
			st.handle(m)
		case <-st.partial.C:
			st.flush()
		case <-st.staleTimer.C:
			st.flush()
			st.flushPending()
			r.stale(fmt.Sprintf("no sample for %d intervals of %v; restarting nvidia-smi", c.staleAfter, c.interval))
			return st.progressed
		case err := <-exited:
			waited = true
			for drained := false; !drained; {
				select {
				case m := <-lines:
					st.handle(m)
				default:
					drained = true
				}
			}
			st.flush()
			st.flushPending()
			if !st.gotRows && !st.sawFailure {
				// A driver change may have made a field invalid: probe again.
				r.forgetFields()
			}
			r.stale(st.exitReason(err))
			return st.progressed
		}
	}
}

func (st *stream) exitReason(err error) string {
	var reason string
	switch {
	case err == nil:
		reason = "nvidia-smi exited"
	case errors.Is(err, remote.ErrDisconnected):
		reason = "connection to host lost"
	default:
		reason = "nvidia-smi exited: " + err.Error()
	}
	if st.noise != "" {
		reason += ": " + st.noise
	}
	return reason
}

// handle processes one output line.
func (st *stream) handle(m lineMsg) {
	r := st.run
	line := m.b // already without "\n"; trailing spaces may end an empty last cell
	if st.pending != nil {
		if v, ok := ParseNVMLVersion(line); ok {
			st.pending.NVMLVersion = v
			st.flushPending()
			return
		}
		st.flushPending()
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if f, ok := ClassifyFailure(line); ok {
		st.sawFailure = true
		if f.Class == event.GPUFailDriverLibraryMismatch {
			st.pending, st.pendingAt = &f, m.at
			return
		}
		r.emit(m.at, f)
		return
	}
	if m.stderr || m.long {
		st.noise = cleanText(bytes.TrimSpace(line), 200)
		return
	}
	g, err := st.p.Parse(line)
	if err != nil {
		st.noise = err.Error()
		return
	}
	st.gotRows = true
	st.add(g, m.at)
}

func (st *stream) flushPending() {
	if st.pending != nil {
		st.run.emit(st.pendingAt, *st.pending)
		st.pending = nil
	}
}

// add puts a row into the current tick, ending the tick first when its
// index repeats and after it when every known GPU has reported.
func (st *stream) add(g event.GPU, at time.Time) {
	if st.inTick(g.Index) {
		st.flush()
	}
	if len(st.tick) == 0 {
		st.tickAt = at
		st.partial.Reset(st.run.c.partial)
	}
	st.tick = append(st.tick, g)
	known := st.run.known
	if len(known) == 0 || len(st.tick) < len(known) {
		return
	}
	for _, idx := range known {
		if !st.inTick(idx) {
			return
		}
	}
	st.flush()
}

func (st *stream) inTick(idx int) bool {
	for i := range st.tick {
		if st.tick[i].Index == idx {
			return true
		}
	}
	return false
}

// flush emits the current tick as an event.GPUSample.
func (st *stream) flush() {
	if len(st.tick) == 0 {
		return
	}
	r := st.run
	st.partial.Stop()
	gpus := slices.Clone(st.tick)
	slices.SortFunc(gpus, func(a, b event.GPU) int { return a.Index - b.Index })
	var missing []int
	for _, idx := range r.known {
		if !st.inTick(idx) {
			missing = append(missing, idx)
		}
	}
	for i := range gpus {
		if _, found := slices.BinarySearch(r.known, gpus[i].Index); !found {
			r.known = append(r.known, gpus[i].Index)
			slices.Sort(r.known)
		}
	}
	r.emit(st.tickAt, event.GPUSample{At: st.tickAt, GPUs: gpus, Missing: missing})
	r.lastSample = st.tickAt
	st.progressed = true
	st.staleTimer.Reset(st.staleWindow)
	st.tick = st.tick[:0]
}
