package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/jsonappend"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// ErrUnknownKind is wrapped by Writer.Write for a payload kind that has no
// codec (it is not part of the format).
var ErrUnknownKind = errors.New("payload kind not in the journal format")

// codec encodes and decodes the data element of one payload kind.
type codec struct {
	kind event.Kind
	// enc appends p's data element to b. at is the event's time (the
	// gpu-sample codec leaves out a Sample.At equal to it).
	enc func(st *encState, b []byte, at time.Time, p event.Payload) ([]byte, error)
	// dec decodes a data element; at is the event's decoded time.
	dec func(st *decState, at time.Time, data []byte) (event.Payload, error)
}

// codecs is the format's table of kinds: every payload kind the cockpit
// publishes except the screenOnly ones. High-rate kinds have compact codecs (codec_compact.go); the
// rest are the payload struct's JSON (fields that are Go errors stored as
// their message, non-finite floats as strings).
var codecs = []codec{
	{kind: event.KindGPUSample, enc: encGPUSample, dec: decGPUSample},    // 2 Hz × GPUs: keyframe + delta arrays
	jsonCodec[event.GPUFailure](),                                        // rare
	jsonCodec[event.GPUStale](),                                          // rare
	jsonCodec[event.Xid](),                                               // rare: a driver error event
	jsonCodec[event.GPUSource](),                                         // when sampling starts or changes mode
	{kind: event.KindLogLines, enc: encLines, dec: decLines},             // raw bytes, offsets implied
	jsonCodec[event.LogReset](),                                          // rare
	jsonCodec[event.LogNotice](),                                         // rare
	jsonCodec[event.LogFollowError](),                                    // rare
	{kind: event.KindThroughput, enc: encThroughput, dec: decThroughput}, // per rank per log report: short keys
	{kind: event.KindTokRate, enc: encRate, dec: decRate},                // ~1 Hz: array
	{kind: event.KindPrefill, enc: encPrefill, dec: decPrefill},          // per prefill batch: short keys
	jsonCodec[event.SpecDecode](),                                        // per vLLM metrics report
	{kind: event.KindLogBench, enc: encBench, dec: decBench},             // RequestRate may be +Inf
	jsonCodec[event.ServerReady](),                                       // rare
	jsonCodec[event.ServerFailure](),                                     // rare
	jsonCodec[event.ServerStatus](),                                      // on change
	redactedJSONCodec(redactLaunched),                                    // per launch; secrets redacted
	{kind: event.KindServerObserved, enc: encObserved, dec: decObserved}, // Found.PidfileErr is an error
	jsonCodec[event.ServerHealthy](),                                     // rare
	{kind: event.KindKillStep, enc: encKillStep, dec: decKillStep},       // Err is an error
	jsonCodec[event.RepoHead](),                                          // on change
	jsonCodec[event.RepoUnreadable](),                                    // on change
	jsonCodec[event.GitStatus](),                                         // on change
	jsonCodec[event.GitAction](),                                         // per action
	jsonCodec[event.GitMoved](),                                          // on change
	{kind: event.KindConnState, enc: encConnState, dec: decConnState},    // Err is an error
	jsonCodec[event.Note](),                                              // journal's own kinds
	jsonCodec[event.ExperimentStart](),
	gpuRowsJSONCodec(func(v *event.ExperimentFingerprint) *[]event.GPU { return &v.Fingerprint.GPUs }),
	jsonCodec[event.ExperimentUpdate](),
	gpuRowsJSONCodec(func(v *event.ExperimentEnd) *[]event.GPU { return &v.GPUs }),
	jsonCodec[event.Key](),
	jsonCodec[event.Session](), // another cockpit session appending (Append)
	jsonCodec[event.Baseline](),
	jsonCodec[event.Repeat](),
	{kind: event.KindBenchStarted, enc: encBenchStarted, dec: decBenchStarted},             // Config.Rate may be +Inf
	{kind: event.KindBenchDone, enc: encBenchDone, dec: decBenchDone},                      // per-request arrays; floats may not be finite
	jsonCodec[event.DriverState](),                                                         // who drives the host; on change
	gpuRowsJSONCodec(func(v *event.HostState) *[]event.GPU { return &v.Fingerprint.GPUs }), // once per session, on connect
	jsonCodec[event.HostChanges](),                                                         // once per session, on connect
	jsonCodec[event.BisectStart](),                                                         // a bisect's range and settings
	jsonCodec[event.BisectLaunch](),                                                        // one per launch of a bisect
	jsonCodec[event.BisectEnd](),
	jsonCodec[event.EngineSample](),   // per scrape (the sampling interval) while the endpoint answers
	jsonCodec[event.EngineEndpoint](), // on change
	jsonCodec[event.Topology](),       // once per connection
	jsonCodec[event.NCCL](),           // after a batch of NCCL lines at a run's start
	jsonCodec[event.KernelLog](),      // once per connection
}

// codecByKind is each kind's codec, nil for the kinds the format leaves
// out (event.KindInfo.ScreenOnly: Writer.Write skips them without an
// error).
var codecByKind = func() (byKind [event.NumKinds]*codec) {
	for i := range codecs {
		c := &codecs[i]
		if byKind[c.kind] != nil {
			panic("journal: duplicate codec for " + c.kind.String())
		}
		byKind[c.kind] = c
	}
	return byKind
}()

// kindIDs maps the record types of the format to their kinds.
var kindIDs = func() map[string]event.Kind {
	m := make(map[string]event.Kind, len(codecs))
	for _, c := range codecs {
		m[c.kind.String()] = c.kind
	}
	return m
}()

// Kinds returns the payload kinds of format v1, in table order.
func Kinds() []string {
	out := make([]string, len(codecs))
	for i, c := range codecs {
		out[i] = c.kind.String()
	}
	return out
}

func codecOf(k event.Kind) *codec { return codecByKind[k] }

// encState is a Writer's encoder state (the gpu-sample keyframe).
type encState struct {
	created time.Time // the header's: times inside data count from it
	gpu     gpuEncState
	log     logEncState
	v1      bool // appending to a version 1 journal: its layouts only
}

// decState is a reader's decoder state (the gpu-sample keyframe).
type decState struct {
	created time.Time
	gpu     gpuDecState
	log     logDecState
}

// payloadAs returns p as a T: payloads are values, but a pointer to one is
// accepted too.
func payloadAs[T event.Payload](p event.Payload) (T, error) {
	switch v := any(p).(type) {
	case T:
		return v, nil
	case *T:
		if v != nil {
			return *v, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("journal: codec %s got a %T", zero.Kind(), p)
}

// jsonCodec stores T as its JSON object. json.Marshal fails on a NaN or
// infinite float: the payloads using this codec have none (their parsers
// refuse "inf" and "nan"), and Write reports it if one ever comes.
func jsonCodec[T event.Payload]() codec { return redactedJSONCodec[T](nil) }

// redactedJSONCodec is jsonCodec with redact applied to a payload before
// it is encoded (nil: none): what a journal must not hold, such as secret
// argv values, never reaches the file, so decoding returns the redacted
// payload.
func redactedJSONCodec[T event.Payload](redact func(T) T) codec {
	var zero T
	return codec{
		kind: zero.Kind(),
		enc: func(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
			v, err := payloadAs[T](p)
			if err != nil {
				return b, err
			}
			if redact != nil {
				v = redact(v)
			}
			j, err := marshalJSON(v)
			if err != nil {
				return b, err
			}
			return append(b, j...), nil
		},
		dec: func(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
			var v T
			err := json.Unmarshal(data, &v)
			return v, err
		},
	}
}

// errText is the message of err, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// textErr turns a stored message back into an error with the same text
// (errors.Is identity is not kept); nil for "".
func textErr(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

// The shadows below replace a payload's error field (or a float that may be
// infinite) by a field of the same JSON name at a shallower depth, which
// encoding/json prefers over the embedded one.

type connStateJSON struct {
	event.ConnState
	Err string `json:"Err,omitempty"`
}

func encConnState(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	v, err := payloadAs[event.ConnState](p)
	if err != nil {
		return b, err
	}
	return appendMarshal(b, connStateJSON{ConnState: v, Err: errText(v.Err)})
}

func decConnState(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
	var s connStateJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	v := s.ConnState
	v.Err = textErr(s.Err)
	return v, nil
}

type killStepJSON struct {
	event.KillStep
	Err string `json:"Err,omitempty"`
}

func encKillStep(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	v, err := payloadAs[event.KillStep](p)
	if err != nil {
		return b, err
	}
	return appendMarshal(b, killStepJSON{KillStep: v, Err: errText(v.Err)})
}

func decKillStep(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
	var s killStepJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	v := s.KillStep
	v.Err = textErr(s.Err)
	return v, nil
}

// redactLaunched is a launch record as the journal stores it: env and
// argv secrets redacted (server.RedactLaunch).
func redactLaunched(l event.ServerLaunched) event.ServerLaunched {
	l.Record.Launch = server.RedactLaunch(l.Record.Launch)
	return l
}

// observedJSON is event.ServerObserved's Found, flattened; its pidfile
// record's secrets are redacted.
type observedJSON struct {
	event.ServerFound
	PidfileErr string `json:"PidfileErr,omitempty"`
}

func encObserved(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	v, err := payloadAs[event.ServerObserved](p)
	if err != nil {
		return b, err
	}
	f := v.Found
	if f.Record != nil {
		r := *f.Record
		r.Launch = server.RedactLaunch(r.Launch)
		f.Record = &r
	}
	return appendMarshal(b, observedJSON{ServerFound: f, PidfileErr: errText(v.Found.PidfileErr)})
}

func decObserved(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
	var s observedJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	f := s.ServerFound
	f.PidfileErr = textErr(s.PidfileErr)
	return event.ServerObserved{Found: f}, nil
}

// float is a float64 whose JSON keeps infinities and NaN as the strings
// "inf", "-inf", "nan".
type float float64

func (f float) MarshalJSON() ([]byte, error) { return jsonappend.Float(nil, float64(f)), nil }

func (f *float) UnmarshalJSON(b []byte) error {
	v, ok := parseNum(b)
	if !ok {
		return fmt.Errorf("not a number: %.40s", b)
	}
	*f = float(v)
	return nil
}

type benchJSON struct {
	event.LogBench
	RequestRate float `json:"RequestRate"`
}

func encBench(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	v, err := payloadAs[event.LogBench](p)
	if err != nil {
		return b, err
	}
	return appendMarshal(b, benchJSON{LogBench: v, RequestRate: float(v.RequestRate)})
}

func decBench(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
	var s benchJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	v := s.LogBench
	v.RequestRate = float64(s.RequestRate)
	return v, nil
}

// throughputJSON is event.Throughput with short keys.
type throughputJSON struct {
	TokPerSec       float                  `json:"t"`
	PromptTokPerSec float                  `json:"p,omitempty"`
	AcceptLength    float                  `json:"al,omitempty"`
	AcceptRate      float                  `json:"ar,omitempty"`
	TokenUsage      float                  `json:"u,omitempty"`
	Tokens          int64                  `json:"n,omitempty"`
	Running         int                    `json:"r,omitempty"`
	Queued          int                    `json:"q,omitempty"`
	CUDAGraph       bool                   `json:"g,omitempty"`
	Has             event.ThroughputFields `json:"h,omitempty"`
	Rank            string                 `json:"rk,omitempty"`
	DP              int                    `json:"dp"`
	Engine          int                    `json:"e"`
	Server          string                 `json:"s,omitempty"`
	Stamp           string                 `json:"st,omitempty"`
	Line            int                    `json:"l,omitempty"`
}

func encThroughput(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	v, err := payloadAs[event.Throughput](p)
	if err != nil {
		return b, err
	}
	return appendMarshal(b, throughputJSON{
		TokPerSec: float(v.TokPerSec), PromptTokPerSec: float(v.PromptTokPerSec), AcceptLength: float(v.AcceptLength),
		AcceptRate: float(v.AcceptRate), TokenUsage: float(v.TokenUsage), Tokens: v.Tokens, Running: v.Running,
		Queued: v.Queued, CUDAGraph: v.CUDAGraph, Has: v.Has, Rank: v.Rank, DP: v.DP, Engine: v.Engine,
		Server: v.Server, Stamp: v.Stamp, Line: v.Line,
	})
}

func decThroughput(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
	var s throughputJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	return event.Throughput{
		TokPerSec: float64(s.TokPerSec), PromptTokPerSec: float64(s.PromptTokPerSec), AcceptLength: float64(s.AcceptLength),
		AcceptRate: float64(s.AcceptRate), TokenUsage: float64(s.TokenUsage), Tokens: s.Tokens, Running: s.Running,
		Queued: s.Queued, CUDAGraph: s.CUDAGraph, Has: s.Has, Rank: s.Rank, DP: s.DP, Engine: s.Engine,
		Server: s.Server, Stamp: s.Stamp, Line: s.Line,
	}, nil
}

// prefillJSON is event.Prefill with short keys.
type prefillJSON struct {
	NewSeq          int                 `json:"ns,omitempty"`
	NewTokens       int64               `json:"nt,omitempty"`
	CachedTokens    int64               `json:"ct,omitempty"`
	CacheHitRatePct float               `json:"hr,omitempty"`
	TokenUsage      float               `json:"u,omitempty"`
	Running         int                 `json:"r,omitempty"`
	Queued          int                 `json:"q,omitempty"`
	InputTokPerSec  float               `json:"it,omitempty"`
	CUDAGraph       bool                `json:"g,omitempty"`
	Has             event.PrefillFields `json:"h,omitempty"`
	Rank            string              `json:"rk,omitempty"`
	DP              int                 `json:"dp"`
	Stamp           string              `json:"st,omitempty"`
	Line            int                 `json:"l,omitempty"`
}

func encPrefill(_ *encState, b []byte, _ time.Time, p event.Payload) ([]byte, error) {
	v, err := payloadAs[event.Prefill](p)
	if err != nil {
		return b, err
	}
	return appendMarshal(b, prefillJSON{
		NewSeq: v.NewSeq, NewTokens: v.NewTokens, CachedTokens: v.CachedTokens, CacheHitRatePct: float(v.CacheHitRatePct),
		TokenUsage: float(v.TokenUsage), Running: v.Running, Queued: v.Queued, InputTokPerSec: float(v.InputTokPerSec),
		CUDAGraph: v.CUDAGraph, Has: v.Has, Rank: v.Rank, DP: v.DP, Stamp: v.Stamp, Line: v.Line,
	})
}

func decPrefill(_ *decState, _ time.Time, data []byte) (event.Payload, error) {
	var s prefillJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	return event.Prefill{
		NewSeq: s.NewSeq, NewTokens: s.NewTokens, CachedTokens: s.CachedTokens, CacheHitRatePct: float64(s.CacheHitRatePct),
		TokenUsage: float64(s.TokenUsage), Running: s.Running, Queued: s.Queued, InputTokPerSec: float64(s.InputTokPerSec),
		CUDAGraph: s.CUDAGraph, Has: s.Has, Rank: s.Rank, DP: s.DP, Stamp: s.Stamp, Line: s.Line,
	}, nil
}

func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := marshalJSON(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// isFinite reports whether v is neither infinite nor NaN.
func isFinite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
