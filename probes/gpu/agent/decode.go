package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Decoder decodes protocol lines with encoding/json (the types of
// wire.go). The zero Decoder is ready; it keeps nothing between lines, so
// one may be used from several goroutines.
type Decoder struct{}

// Bounds of one sample line, so that a garbled or hostile line of at most
// MaxLineBytes cannot make the decoder allocate far more than its size
// (a GPU object of 12 bytes decodes to a event.GPU of over 700 bytes): the
// arrays are counted before they are decoded. A line beyond one is a
// *SyntaxError.
const (
	MaxGPUs    = 1024 // GPU objects in "gpus"
	MaxMissing = 1024 // indices in "missing"
	MaxApps    = 8192 // process objects in "apps"
)

// Decode decodes one line (without or with its "\n"). A JSON object whose
// "t" is not known decodes to KindUnknown without error, whatever else it
// holds (forward compatibility). Errors: a *SyntaxError for a line that is
// not a protocol object (not JSON, a known key with a value of the wrong
// type, a sample GPU without "index", a sample beyond MaxGPUs, MaxMissing
// or MaxApps, a key of the sample, GPU or process objects whose value is
// not a plain number or boolean repeated in its object), a *VersionError
// for a hello or unavailable line newer than ProtocolVersion.
func (d *Decoder) Decode(line []byte) (Message, error) {
	var head struct {
		T *string `json:"t"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return Message{}, syntaxError(err)
	}
	if head.T == nil {
		return Message{}, &SyntaxError{Msg: `no "t" in the object`}
	}
	m := Message{Type: *head.T}
	var err error
	switch m.Type {
	case "hello":
		m.Kind = KindHello
		m.Hello, err = decodeHello(line)
	case "unavailable":
		m.Kind = KindUnavailable
		var u unavailableJSON
		if err = json.Unmarshal(line, &u); err == nil {
			m.Unavailable = Unavailable{V: int(u.V), Reason: string(u.Reason), Code: int(u.Code)}
			err = checkVersion(int(u.V))
		}
	case "launch":
		m.Kind = KindLaunch
		var l launchJSON
		if err = json.Unmarshal(line, &l); err == nil && l.PID <= 1 {
			err = errors.New("launch line without a process id above 1")
		}
		m.Launch = Launch{PID: int(l.PID)}
	case "alive":
		m.Kind = KindAlive
		var a aliveJSON
		err = json.Unmarshal(line, &a)
		m.At = a.At.t
	case "sample":
		m.Kind = KindSample
		var smp event.GPUSample
		smp, err = decodeSample(line)
		m.At, m.Payload = smp.At, smp
	case "xid":
		m.Kind = KindXid
		var x xidJSON
		err = json.Unmarshal(line, &x)
		m.At = x.At.t
		m.Payload = event.Xid{Index: int(x.Index), UUID: string(x.UUID), BusID: string(x.BusID), Code: uint64(x.Code)}
	case "failure":
		m.Kind = KindFailure
		var f failureJSON
		err = json.Unmarshal(line, &f)
		m.At = f.At.t
		m.Payload = event.GPUFailure{Class: event.GPUFailureClass(f.Class), BusID: string(f.BusID), Reason: string(f.Reason),
			NeedsReboot: bool(f.NeedsReboot), NVMLVersion: string(f.NVMLVersion), Line: string(f.Line)}
	case "stale":
		m.Kind = KindStale
		var st staleJSON
		err = json.Unmarshal(line, &st)
		m.At = st.At.t
		m.Payload = event.GPUStale{LastSample: st.LastSample.t, Missed: int(st.Missed), Reason: string(st.Reason)}
	}
	if err != nil {
		return Message{}, syntaxError(err)
	}
	return m, nil
}

func decodeHello(line []byte) (Hello, error) {
	var h helloJSON
	if err := json.Unmarshal(line, &h); err != nil {
		return Hello{}, err
	}
	if h.IntervalMS < 0 || int64(h.IntervalMS) > math.MaxInt64/int64(time.Millisecond) {
		return Hello{}, errors.New("interval_ms out of range")
	}
	return Hello{V: int(h.V), Version: string(h.Version), Driver: string(h.Driver), NVML: string(h.NVML), CUDA: int(h.CUDA),
		GPUs: int(h.GPUs), Interval: time.Duration(h.IntervalMS) * time.Millisecond, Simulated: bool(h.Simulated)}, checkVersion(int(h.V))
}

func decodeSample(line []byte) (event.GPUSample, error) {
	var in sampleIn
	if err := json.Unmarshal(line, &in); err != nil {
		return event.GPUSample{}, err
	}
	smp := event.GPUSample{At: in.At.t}
	if in.GPUs.set {
		smp.GPUs = make([]event.GPU, len(in.GPUs.v))
		for i := range in.GPUs.v {
			g, err := in.GPUs.v[i].gpu()
			if err != nil {
				return event.GPUSample{}, err
			}
			smp.GPUs[i] = g
		}
	}
	if in.Missing.set {
		smp.Missing = make([]int, len(in.Missing.v))
		for i, m := range in.Missing.v {
			smp.Missing[i] = m.n
		}
	}
	if in.Apps.set {
		smp.Apps = make([]event.ComputeApp, len(in.Apps.v))
		for i := range in.Apps.v {
			smp.Apps[i] = in.Apps.v[i].app()
		}
	}
	return smp, nil
}

func checkVersion(v int) error {
	switch {
	case v > ProtocolVersion:
		return &VersionError{Got: v}
	case v < 1:
		return errors.New(`missing or invalid protocol version "v"`)
	}
	return nil
}

// syntaxError returns err as a *SyntaxError, with encoding/json's offset in
// the line when it gives one; a *VersionError or *SyntaxError is returned
// as it is.
func syntaxError(err error) error {
	var ve *VersionError
	var se *SyntaxError
	if errors.As(err, &ve) || errors.As(err, &se) {
		return err
	}
	var jse *json.SyntaxError
	var jte *json.UnmarshalTypeError
	offset := 0
	switch {
	case errors.As(err, &jse):
		offset = int(jse.Offset)
	case errors.As(err, &jte):
		offset = int(jte.Offset)
	}
	return &SyntaxError{Offset: offset, Msg: err.Error()}
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
