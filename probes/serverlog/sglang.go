package serverlog

import "bytes"

// Server names used in payloads.
const (
	ServerSGLang = "sglang"
	ServerVLLM   = "vllm"
)

var (
	kwDecodeBatch  = []byte("Decode batch")
	kwPrefillBatch = []byte("Prefill batch")
)

// ParseSGLangDecode parses an SGLang "Decode batch" line, in every variant
// seen from 2024 to 2026 (research notes §1.2): "." or "," after "batch", an
// optional " [N]" iteration counter, a trailing ", " or not, any prefix
// ("[2025-10-22 10:27:57 TP0] ", "[... DP1 TP0] ", "[2025-11-11 04:06:27] ",
// the custom "2025-10-20 03:02:22 INFO 31223 [DP3 TP3 EP3 file.py:222] ",
// docker compose "sglang-1  | ...") and ANSI colour codes in any of their
// three forms.
//
// Fields read: "#running-req" (Running), "#token" / "#full token"
// (Tokens), "token usage" / "full token usage" (TokenUsage, fraction 0–1),
// "accept len" (AcceptLength, tokens per verify step incl. the bonus token),
// "accept rate" (AcceptRate, 0–1), "cuda graph" / "cpu graph" / "npu graph"
// (CUDAGraph), "gen throughput (token/s)" (TokPerSec, tok/s for this rank)
// and "#queue-req" (Queued); unknown keys are ignored.
//
// ok is false when the line is not a decode line or its throughput is
// missing or untrustworthy (no decimal part, or cut off at the end of the
// line where a log shipper may have truncated it). Line is left 0. It does
// not allocate on lines that do not match, nor for rank tags TP0–TP15.
func ParseSGLangDecode(line []byte) (Throughput, bool) {
	if bytes.Index(line, kwDecodeBatch) < 0 {
		return Throughput{}, false
	}
	var buf [cleanBufSize]byte
	line = clean(line, &buf)
	at := bytes.Index(line, kwDecodeBatch)
	if at < 0 {
		return Throughput{}, false
	}
	body, ok := batchBody(line[at+len(kwDecodeBatch):])
	if !ok {
		return Throughput{}, false
	}
	t := Throughput{DP: -1, Engine: -1, Server: ServerSGLang}
	haveRate := false
	it := kvIter{rest: body}
	for {
		key, val, last, ok := it.next()
		if !ok {
			break
		}
		switch string(key) {
		case "gen throughput (token/s)":
			if f, ok := parseFloat(val); ok && !last && hasFraction(val) && f >= 0 {
				t.TokPerSec, haveRate = f, true
			}
		case "#running-req":
			if n, ok := parseInt(val); ok {
				t.Running = int(n)
				t.Has |= HasRunning
			}
		case "#queue-req":
			if n, ok := parseInt(val); ok {
				t.Queued = int(n)
				t.Has |= HasQueued
			}
		case "#token", "#full token":
			if n, ok := parseInt(val); ok {
				t.Tokens = n
				t.Has |= HasTokens
			}
		case "token usage", "full token usage":
			if f, ok := parseFloat(val); ok {
				t.TokenUsage = f
				t.Has |= HasTokenUsage
			}
		case "accept len":
			if f, ok := parseFloat(val); ok {
				t.AcceptLength = f
				t.Has |= HasAcceptLength
			}
		case "accept rate":
			if f, ok := parseFloat(val); ok {
				t.AcceptRate = f
				t.Has |= HasAcceptRate
			}
		default:
			if bytes.HasSuffix(key, []byte(" graph")) {
				if b, ok := parseBool(val); ok {
					t.CUDAGraph = b
					t.Has |= HasCUDAGraph
				}
			}
		}
	}
	if !haveRate {
		return Throughput{}, false
	}
	prefix := line[:at]
	rank, dp := findRank(prefix)
	if rank != nil {
		t.Rank = internRank(rank)
	}
	t.DP = dp
	if st := findStamp(prefix); st != nil {
		t.Stamp = string(st)
	}
	return t, true
}

// batchBody skips what follows "Decode batch" / "Prefill batch" up to the
// first field: "." or ",", an optional " [N]" iteration counter, spaces.
// In 2024 builds the prefill form is "Prefill batch(mixed #running-req:
// N). #new-seq: ..."; that parenthesis is skipped too.
func batchBody(rest []byte) ([]byte, bool) {
	if len(rest) > 0 && rest[0] == '(' {
		end := bytes.IndexByte(rest, ')')
		if end < 0 {
			return nil, false
		}
		rest = rest[end+1:]
	}
	if len(rest) > 2 && rest[0] == ' ' && rest[1] == '[' {
		end := bytes.IndexByte(rest, ']')
		if end < 0 {
			return nil, false
		}
		rest = rest[end+1:]
	}
	if len(rest) == 0 || (rest[0] != '.' && rest[0] != ',') {
		return nil, false
	}
	return bytes.TrimLeft(rest[1:], " "), true
}

// parseBool reads Python's "True" / "False".
func parseBool(v []byte) (bool, bool) {
	switch string(v) {
	case "True", "true":
		return true, true
	case "False", "false":
		return false, true
	}
	return false, false
}

// PrefillFields says which optional fields of a Prefill were present.
type PrefillFields uint16

const (
	HasNewSeq PrefillFields = 1 << iota
	HasNewTokens
	HasCachedTokens
	HasCacheHitRate
	HasPrefillTokenUsage
	HasPrefillRunning
	HasPrefillQueued
	HasPrefillInputTokPerSec
	HasPrefillCUDAGraph
)

// Prefill is one SGLang "Prefill batch" line (research notes §1.3). It is
// an event payload.
type Prefill struct {
	NewSeq          int     // #new-seq: requests whose prefill is in this batch
	NewTokens       int64   // #new-token: prompt tokens computed
	CachedTokens    int64   // #cached-token: prompt tokens served by the prefix cache
	CacheHitRatePct float64 // "cache hit rate: 12.50%" as printed, percent 0–100 (2024–early 2025 builds)
	TokenUsage      float64 // KV-cache usage fraction 0–1
	Running         int     // #running-req
	Queued          int     // #queue-req
	InputTokPerSec  float64 // "input throughput (token/s)", tok/s (2026 builds, PD prefill)
	CUDAGraph       bool    // "cuda graph: True" (2026 builds)
	Has             PrefillFields

	Rank  string // rank tag as printed, "" when none
	DP    int    // DP rank, -1 when none
	Stamp string // the line's own timestamp text, "" when none
	Line  int    // 1-based line number in the parsed input (0 when streaming)
}

// Kind implements event.Payload.
func (Prefill) Kind() string { return "prefill" }

// CacheHitRate returns the prefix-cache hit fraction 0–1 computed as the
// newer SGLang source does, #cached-token / (#new-token + #cached-token);
// ok is false when either count is missing or both are 0.
func (p Prefill) CacheHitRate() (float64, bool) {
	if p.Has&(HasNewTokens|HasCachedTokens) != HasNewTokens|HasCachedTokens || p.NewTokens+p.CachedTokens == 0 {
		return 0, false
	}
	return float64(p.CachedTokens) / float64(p.NewTokens+p.CachedTokens), true
}

// ParseSGLangPrefill parses an SGLang "Prefill batch" line in the 2024–2026
// forms of research notes §1.3, with the same prefix and ANSI tolerance as
// ParseSGLangDecode. ok is false when the line is not a prefill line or has
// neither #new-seq nor #new-token. It does not allocate on other lines.
func ParseSGLangPrefill(line []byte) (Prefill, bool) {
	if bytes.Index(line, kwPrefillBatch) < 0 {
		return Prefill{}, false
	}
	var buf [cleanBufSize]byte
	line = clean(line, &buf)
	at := bytes.Index(line, kwPrefillBatch)
	if at < 0 {
		return Prefill{}, false
	}
	body, ok := batchBody(line[at+len(kwPrefillBatch):])
	if !ok {
		return Prefill{}, false
	}
	p := Prefill{DP: -1}
	it := kvIter{rest: body}
	for {
		key, val, _, ok := it.next()
		if !ok {
			break
		}
		switch string(key) {
		case "#new-seq":
			if n, ok := parseInt(val); ok {
				p.NewSeq = int(n)
				p.Has |= HasNewSeq
			}
		case "#new-token":
			if n, ok := parseInt(val); ok {
				p.NewTokens = n
				p.Has |= HasNewTokens
			}
		case "#cached-token":
			if n, ok := parseInt(val); ok {
				p.CachedTokens = n
				p.Has |= HasCachedTokens
			}
		case "cache hit rate":
			v, _ := cutSuffix(val, "%")
			if f, ok := parseFloat(v); ok {
				p.CacheHitRatePct = f
				p.Has |= HasCacheHitRate
			}
		case "token usage", "full token usage":
			if f, ok := parseFloat(val); ok {
				p.TokenUsage = f
				p.Has |= HasPrefillTokenUsage
			}
		case "#running-req":
			if n, ok := parseInt(val); ok {
				p.Running = int(n)
				p.Has |= HasPrefillRunning
			}
		case "#queue-req":
			if n, ok := parseInt(val); ok {
				p.Queued = int(n)
				p.Has |= HasPrefillQueued
			}
		case "input throughput (token/s)":
			if f, ok := parseFloat(val); ok {
				p.InputTokPerSec = f
				p.Has |= HasPrefillInputTokPerSec
			}
		default:
			if bytes.HasSuffix(key, []byte(" graph")) {
				if b, ok := parseBool(val); ok {
					p.CUDAGraph = b
					p.Has |= HasPrefillCUDAGraph
				}
			}
		}
	}
	if p.Has&(HasNewSeq|HasNewTokens) == 0 {
		return Prefill{}, false
	}
	prefix := line[:at]
	rank, dp := findRank(prefix)
	if rank != nil {
		p.Rank = internRank(rank)
	}
	p.DP = dp
	if st := findStamp(prefix); st != nil {
		p.Stamp = string(st)
	}
	return p, true
}
