package agent

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Decoder decodes protocol lines. It keeps the strings it has seen (GPU
// names, bus ids, UUIDs, P-states repeat every tick), so that an 8-GPU
// sample costs two allocations: its GPU slice and the event payload. A
// Decoder is not safe for concurrent use.
type Decoder struct {
	s    scanner
	strs map[string]string
	// gpuHint and appHint are the GPU and process counts of the last
	// sample decoded (at most MaxGPUs, MaxApps): the next sample's slices
	// are allocated at those sizes (for its first "gpus" and "apps" key
	// only: a line repeating a key must not allocate them again).
	gpuHint, appHint int
}

// Bounds of one sample line, so that a garbled or hostile line of at most
// MaxLineBytes cannot make the decoder allocate far more than its size
// (a GPU object of 12 bytes decodes to a event.GPU of over a kilobyte). A
// line beyond one is a *SyntaxError.
const (
	MaxGPUs    = 1024 // GPU objects in "gpus"
	MaxMissing = 1024 // indices in "missing"
	MaxApps    = 8192 // process objects in "apps"
)

// maxInterned bounds the Decoder's string table; it is cleared when full.
const maxInterned = 4096

// maxInternLen is the longest string the Decoder keeps.
const maxInternLen = 256

// str reads a JSON string.
func (d *Decoder) str() string {
	raw, plain := d.s.rawString()
	if d.s.err != nil {
		return ""
	}
	if !plain {
		raw = d.s.unescape(raw)
		if d.s.err != nil {
			return ""
		}
	}
	if len(raw) == 0 {
		return ""
	}
	if v, ok := d.strs[string(raw)]; ok {
		return v
	}
	v := string(raw)
	if len(raw) <= maxInternLen {
		if d.strs == nil {
			d.strs = make(map[string]string, 64)
		} else if len(d.strs) >= maxInterned {
			clear(d.strs)
		}
		d.strs[v] = v
	}
	return v
}

// Decode decodes one line (without or with its "\n"). A JSON object whose
// "t" is not known decodes to KindUnknown without error, whatever else it
// holds (forward compatibility). Errors: a *SyntaxError for a line that is not a
// protocol object (bad JSON, a known key with a value of the wrong type, a
// sample GPU without "index"), a *VersionError for a hello or unavailable
// line newer than ProtocolVersion.
func (d *Decoder) Decode(line []byte) (Message, error) {
	s := &d.s
	s.reset(line)
	// "t" comes first in every line the agent writes; find it before the
	// rest so that the body is read by its type.
	t, err := d.findType()
	if err != nil {
		return Message{}, err
	}
	m := Message{Type: t}
	s.reset(line)
	switch t {
	case "hello":
		m.Kind = KindHello
		d.hello(&m.Hello)
	case "unavailable":
		m.Kind = KindUnavailable
		d.unavailable(&m.Unavailable)
	case "sample":
		m.Kind = KindSample
		smp := d.sample()
		m.At = smp.At
		if s.err == nil {
			m.Payload = smp
		}
	case "xid":
		m.Kind = KindXid
		var x event.Xid
		m.At = d.xid(&x)
		m.Payload = x
	case "failure":
		m.Kind = KindFailure
		var f event.GPUFailure
		m.At = d.failure(&f)
		m.Payload = f
	case "stale":
		m.Kind = KindStale
		var st event.GPUStale
		m.At = d.stale(&st)
		m.Payload = st
	case "alive":
		m.Kind = KindAlive
		m.At = d.alive()
	case "launch":
		m.Kind = KindLaunch
		d.launch(&m.Launch)
	default:
		// Unknown: check that the line is JSON, and skip it.
		s.skip(0)
	}
	s.end()
	if s.err != nil {
		return Message{}, s.err
	}
	switch m.Kind {
	case KindHello:
		if err := checkVersion(m.Hello.V); err != nil {
			return Message{}, err
		}
	case KindUnavailable:
		if err := checkVersion(m.Unavailable.V); err != nil {
			return Message{}, err
		}
	case KindLaunch:
		if m.Launch.PID <= 1 {
			return Message{}, &SyntaxError{Msg: "launch line without a process id above 1"}
		}
	}
	return m, nil
}

func checkVersion(v int) error {
	switch {
	case v > ProtocolVersion:
		return &VersionError{Got: v}
	case v < 1:
		return &SyntaxError{Msg: "missing or invalid protocol version \"v\""}
	}
	return nil
}

// findType returns the line's "t", skipping the members before it.
func (d *Decoder) findType() (string, error) {
	s := &d.s
	s.open('{')
	for n := 0; s.more(&n, '}'); {
		k := s.key()
		if string(k) == "t" {
			t := d.str()
			if s.err != nil {
				return "", s.err
			}
			return t, nil
		}
		s.skip(0)
	}
	if s.err != nil {
		return "", s.err
	}
	return "", &SyntaxError{Offset: 0, Msg: `no "t" in the object`}
}

func (d *Decoder) hello(h *Hello) {
	s := &d.s
	s.open('{')
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case "v":
			h.V = s.int()
		case "version":
			h.Version = d.str()
		case "driver":
			h.Driver = d.str()
		case "nvml":
			h.NVML = d.str()
		case "cuda":
			h.CUDA = s.int()
		case "gpus":
			h.GPUs = s.int()
		case "simulated":
			h.Simulated = s.bool()
		case "interval_ms":
			ms := s.int64()
			if ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
				s.fail("interval_ms out of range")
			}
			h.Interval = time.Duration(ms) * time.Millisecond
		default:
			s.skip(0)
		}
	}
}

func (d *Decoder) unavailable(u *Unavailable) {
	s := &d.s
	s.open('{')
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case "v":
			u.V = s.int()
		case "reason":
			u.Reason = d.str()
		case "code":
			u.Code = s.int()
		default:
			s.skip(0)
		}
	}
}

// time reads a time: Unix nanoseconds or [seconds, nanoseconds].
func (d *Decoder) time() time.Time {
	s := &d.s
	if s.peek() != '[' {
		return time.Unix(0, s.int64())
	}
	s.i++
	sec := s.int64()
	s.expect(',')
	ns := s.int64()
	s.expect(']')
	if ns < 0 || ns >= 1e9 {
		s.fail("nanoseconds out of range")
	}
	return time.Unix(sec, ns)
}

func (d *Decoder) sample() event.GPUSample {
	s := &d.s
	var smp event.GPUSample
	gpuHint, appHint := d.gpuHint, d.appHint
	s.open('{')
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case "at":
			smp.At = d.time()
		case "gpus":
			smp.GPUs = d.gpus(gpuHint)
			gpuHint = 0
		case "missing":
			smp.Missing = make([]int, 0, 4)
			s.open('[')
			for k := 0; s.more(&k, ']'); {
				if len(smp.Missing) == MaxMissing {
					s.fail("more than " + strconv.Itoa(MaxMissing) + " missing GPUs")
					break
				}
				smp.Missing = append(smp.Missing, d.index())
			}
		case "apps":
			smp.Apps = d.apps(appHint)
			appHint = 0
		default:
			s.skip(0)
		}
	}
	return smp
}

// gpus reads the array of at most MaxGPUs GPU objects into a slice of
// capacity hint (the last sample's count: a host's count rarely changes,
// so the slice is allocated once), growing it as needed.
func (d *Decoder) gpus(hint int) []event.GPU {
	s := &d.s
	if s.peek() != '[' {
		s.fail("expected '['")
		return nil
	}
	gs := []event.GPU{} // allocates nothing: "[]" is read, not nil
	s.open('[')
	for n := 0; s.more(&n, ']'); {
		if n == 1 {
			gs = make([]event.GPU, 0, max(1, hint))
		}
		if len(gs) == MaxGPUs {
			s.fail("more than " + strconv.Itoa(MaxGPUs) + " GPUs")
			break
		}
		gs = append(gs, absentGPU)
		d.gpu(&gs[len(gs)-1])
	}
	if s.err == nil {
		d.gpuHint = len(gs)
	}
	return gs
}

// index reads a GPU index: an integer, 0 or more.
func (d *Decoder) index() int {
	n := d.s.int()
	if n < 0 {
		d.s.fail("negative GPU index")
		return 0
	}
	return n
}

// absentGPU is a GPU whose every field was not read: the decoder's start
// for a GPU object, whose left-out keys stay Absent.
var absentGPU = event.AbsentGPU(0)

func (d *Decoder) gpu(g *event.GPU) {
	s := &d.s
	s.open('{')
	hasIndex := false
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case keyIndex:
			g.Index = d.index()
			hasIndex = true
		case keyName:
			g.Name = d.text()
		case keyBusID:
			g.BusID = d.text()
		case keyUUID:
			g.UUID = d.text()
		case keyUtilGPU:
			g.UtilGPUPct = d.reading()
		case keyUtilMem:
			g.UtilMemPct = d.reading()
		case keyMemUsed:
			g.MemUsedMiB = d.reading()
		case keyMemTotal:
			g.MemTotalMiB = d.reading()
		case keyPowerDraw:
			g.PowerDrawW = d.reading()
		case keyPowerLimit:
			g.PowerLimitW = d.reading()
		case keyTemp:
			g.TempC = d.reading()
		case keySMClock:
			g.SMClockMHz = d.reading()
		case keyMemClock:
			g.MemClockMHz = d.reading()
		case keySMClockMax:
			g.SMClockMax = d.reading()
		case keyFan:
			g.FanPct = d.reading()
		case keyPState:
			g.PState = d.text()
		case keyPCIeGenCurrent:
			g.PCIeGenCurrent = d.reading()
		case keyPCIeGenMax:
			g.PCIeGenMax = d.reading()
		case keyPCIeWidthCurrent:
			g.PCIeWidthCurrent = d.reading()
		case keyPCIeWidthMax:
			g.PCIeWidthMax = d.reading()
		case keyClockEvents:
			g.ClockEvents = d.clockEvents()
		case keyPersistence:
			g.Persistence = d.text()
		case keyECC:
			g.ECCMode = d.text()
		case keyMIG:
			g.MIGMode = d.text()
		case keyLost:
			g.Lost = s.bool()
		case keyPCIeRx:
			g.PCIeRxKBs = d.reading()
		case keyPCIeTx:
			g.PCIeTxKBs = d.reading()
		default:
			s.skip(0)
		}
	}
	if !hasIndex {
		s.fail(`GPU object without "index"`)
	}
}

// apps reads the array of at most MaxApps process objects into a slice
// of capacity hint (the last sample's count), growing it as needed.
func (d *Decoder) apps(hint int) []event.ComputeApp {
	s := &d.s
	apps := []event.ComputeApp{} // allocates nothing: "[]" is read, not nil
	s.open('[')
	for n := 0; s.more(&n, ']'); {
		if n == 1 {
			apps = make([]event.ComputeApp, 0, hint)
		}
		if len(apps) == MaxApps {
			s.fail("more than " + strconv.Itoa(MaxApps) + " processes")
			break
		}
		a := event.ComputeApp{
			Name:    event.Text{Status: event.CellAbsent},
			UsedMiB: event.Reading{Status: event.CellAbsent},
			BusID:   event.Text{Status: event.CellAbsent},
			UUID:    event.Text{Status: event.CellAbsent},
		}
		s.open('{')
		for k := 0; s.more(&k, '}'); {
			switch string(s.key()) {
			case "pid":
				a.PID = s.int()
			case "pid_status":
				a.PIDStatus = d.status()
			case "name":
				a.Name = d.text()
			case "used_mib":
				a.UsedMiB = d.reading()
			case "pci_bus_id":
				a.BusID = d.text()
			case "uuid":
				a.UUID = d.text()
			default:
				s.skip(0)
			}
		}
		apps = append(apps, a)
	}
	if s.err == nil {
		d.appHint = len(apps)
	}
	return apps
}

// status reads a event.CellStatus number.
func (d *Decoder) status() event.CellStatus {
	n := d.s.uint64()
	if n > math.MaxUint8 {
		d.s.fail("status out of range")
		return 0
	}
	return event.CellStatus(n)
}

func (d *Decoder) reading() event.Reading {
	s := &d.s
	switch c := s.peek(); {
	case c == '"':
		raw := d.str()
		return event.Reading{Status: rawStatus(raw), Raw: raw}
	case c == '{':
		var r event.Reading
		s.i++
		hasStatus := false
		for n := 0; s.more(&n, '}'); {
			switch string(s.key()) {
			case "status":
				r.Status = d.status()
				hasStatus = true
			case "raw":
				r.Raw = d.str()
			case "value":
				r.Value = d.numOrWord()
			default:
				s.skip(0)
			}
		}
		if !hasStatus {
			s.fail(`reading object without "status"`)
		}
		return r
	}
	return event.Reading{Value: s.float()}
}

func (d *Decoder) numOrWord() float64 {
	if d.s.peek() != '"' {
		return d.s.float()
	}
	raw, _ := d.s.rawString()
	switch string(raw) {
	case "nan":
		return math.NaN()
	case "inf":
		return math.Inf(1)
	case "-inf":
		return math.Inf(-1)
	}
	d.s.fail(`expected a number, "nan", "inf" or "-inf"`)
	return 0
}

func (d *Decoder) text() event.Text {
	s := &d.s
	if s.peek() != '{' {
		v := d.str()
		return event.Text{S: v, Status: textStatus(v)}
	}
	var t event.Text
	s.i++
	hasStatus := false
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case "status":
			t.Status = d.status()
			hasStatus = true
		case "s":
			t.S = d.str()
		default:
			s.skip(0)
		}
	}
	if !hasStatus {
		s.fail(`text object without "status"`)
	}
	return t
}

func (d *Decoder) clockEvents() event.ClockEvents {
	s := &d.s
	switch s.peek() {
	case '"':
		raw := d.str()
		return event.ClockEvents{Status: rawStatus(raw), Raw: raw}
	case '{':
		var c event.ClockEvents
		s.i++
		hasStatus := false
		for n := 0; s.more(&n, '}'); {
			switch string(s.key()) {
			case "status":
				c.Status = d.status()
				hasStatus = true
			case "raw":
				c.Raw = d.str()
			case "mask":
				c.Mask = event.ClockEventReason(s.uint64())
			default:
				s.skip(0)
			}
		}
		if !hasStatus {
			s.fail(`clock_events object without "status"`)
		}
		return c
	}
	return event.ClockEvents{Mask: event.ClockEventReason(s.uint64())}
}

func (d *Decoder) xid(x *event.Xid) time.Time {
	s := &d.s
	var at time.Time
	s.open('{')
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case "at":
			at = d.time()
		case "index":
			x.Index = s.int()
		case "uuid":
			x.UUID = d.str()
		case "pci_bus_id":
			x.BusID = d.str()
		case "code":
			x.Code = s.uint64()
		default:
			s.skip(0)
		}
	}
	return at
}

func (d *Decoder) failure(f *event.GPUFailure) time.Time {
	s := &d.s
	var at time.Time
	s.open('{')
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case "at":
			at = d.time()
		case "class":
			f.Class = event.GPUFailureClass(d.str())
		case "pci_bus_id":
			f.BusID = d.str()
		case "reason":
			f.Reason = d.str()
		case "needs_reboot":
			f.NeedsReboot = s.bool()
		case "nvml_version":
			f.NVMLVersion = d.str()
		case "line":
			f.Line = d.str()
		default:
			s.skip(0)
		}
	}
	return at
}

func (d *Decoder) stale(st *event.GPUStale) time.Time {
	s := &d.s
	var at time.Time
	s.open('{')
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case "at":
			at = d.time()
		case "last_sample":
			st.LastSample = d.time()
		case "missed":
			st.Missed = s.int()
		case "reason":
			st.Reason = d.str()
		default:
			s.skip(0)
		}
	}
	return at
}

// alive reads a heartbeat line and returns its "at".
func (d *Decoder) alive() time.Time {
	s := &d.s
	var at time.Time
	s.open('{')
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case "at":
			at = d.time()
		default:
			s.skip(0)
		}
	}
	return at
}

// launch reads a launch line.
func (d *Decoder) launch(l *Launch) {
	s := &d.s
	s.open('{')
	for n := 0; s.more(&n, '}'); {
		switch string(s.key()) {
		case "pid":
			l.PID = s.int()
		default:
			s.skip(0)
		}
	}
}

// MaxLineBytes bounds one protocol line; a longer one is reported as a
// *LineError and skipped. An 8-GPU sample is about 5 KiB; 1,000 processes
// add about 150 KiB.
const MaxLineBytes = 4 << 20

// errLineTooLong is a LineError's Err for a line over MaxLineBytes.
var errLineTooLong = errors.New("line longer than 4 MiB")

// Reader reads protocol lines from a stream (the agent's stdout).
type Reader struct {
	br   *bufio.Reader
	d    Decoder
	n    int    // lines read
	long []byte // a line longer than br's buffer, assembled
}

// NewReader reads r (which it does not close).
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next message. Blank lines are skipped. A line that
// cannot be decoded returns a *LineError, and the next call goes on with
// the following line; a line whose "t" is unknown returns a KindUnknown
// message. At the end of the stream Next returns io.EOF (a last line
// without "\n" is still decoded), or the stream's read error.
func (r *Reader) Next() (Message, error) {
	for {
		line, err := r.line()
		if err != nil {
			return Message{}, err
		}
		r.n++
		if line == nil {
			return Message{}, &LineError{Line: r.n, Err: errLineTooLong}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, derr := r.d.Decode(line)
		if derr != nil {
			return Message{}, &LineError{Line: r.n, Excerpt: excerpt(line), Err: derr}
		}
		return m, nil
	}
}

// line returns the next line without its "\n"; nil (and no error) for a
// line over MaxLineBytes, which is consumed.
func (r *Reader) line() ([]byte, error) {
	b, err := r.br.ReadSlice('\n')
	if err == nil {
		return b[:len(b)-1], nil
	}
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], b...)
		tooLong := false
		for {
			b, err = r.br.ReadSlice('\n')
			if !tooLong {
				r.long = append(r.long, b...)
				if len(r.long) > MaxLineBytes {
					tooLong = true
					r.long = r.long[:0]
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			if tooLong {
				return nil, nil
			}
			if err == nil {
				return r.long[:len(r.long)-1], nil
			}
			return r.long, nil // the last line, without "\n"
		}
	}
	if err == io.EOF && len(b) > 0 {
		return b, nil
	}
	return nil, err
}

// excerpt returns a line's first 120 bytes, sanitised.
func excerpt(b []byte) string {
	if len(b) > 120 {
		return sanitize.Line(b[:120]) + "…"
	}
	return sanitize.Line(b)
}
