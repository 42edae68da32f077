package serverlog

import (
	"bytes"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

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
// not allocate on lines that do not match; on a match it allocates only the
// Stamp string (rank tags TP0–TP15 are shared constants).
func ParseSGLangDecode(line []byte) (event.Throughput, bool) {
	var t event.Throughput
	own := ownPrefixEnd(line)
	if own > 0 {
		if stamp, ok := ownDecodeLine(&t, line, own); ok {
			t.Stamp = string(stamp)
			return t, true
		}
	}
	if bytes.Index(line, kwDecodeBatch) < 0 {
		return event.Throughput{}, false // before buf, which costs a 1 KiB clear
	}
	var buf [cleanBufSize]byte
	stamp, ok := parseSGLangDecode(&t, line, &buf, own)
	if !ok {
		return event.Throughput{}, false
	}
	if stamp != nil {
		t.Stamp = string(stamp)
	}
	return t, true
}

// parseSGLangDecode is ParseSGLangDecode into *t (left undefined when ok
// is false) without the Stamp string: the stamp is returned as bytes of
// line or buf, for the caller to intern. own is ownPrefixEnd(line), or 0 to
// do without.
func parseSGLangDecode(t *event.Throughput, line []byte, buf *[cleanBufSize]byte, own int) (stamp []byte, ok bool) {
	at := indexDecodeBatch(line, own)
	if at < 0 {
		return nil, false
	}
	ownAt := own > 0 && at == own
	line, at, cleaned := cleanFirst(line, at, kwDecodeBatch, buf, ownAt)
	if at < 0 {
		return nil, false
	}
	stamp, ok, bad := decodeFields(t, line, at, ownAt && !cleaned)
	if (!ok || bad) && !cleaned {
		if line, at = cleanAgain(line, kwDecodeBatch, buf); at >= 0 {
			stamp, ok, _ = decodeFields(t, line, at, false)
		}
	}
	return stamp, ok
}

// decodeFields reads a decode line whose keyword is at line[at:] into *t
// (undefined when ok is false). bad reports a known field whose value
// could not be read. own says that line[:at] is the line's own prefix (see
// ownPrefixEnd).
func decodeFields(t *event.Throughput, line []byte, at int, own bool) (stamp []byte, ok, bad bool) {
	if stamp, ok, bad, sure := decodeFieldsFast(t, line, at, own); sure {
		return stamp, ok, bad
	}
	return decodeFieldsGeneral(t, line, at)
}

// decodeFieldsGeneral is decodeFields for any layout: any key order, any
// padding, unknown keys.
func decodeFieldsGeneral(t *event.Throughput, line []byte, at int) (stamp []byte, ok, bad bool) {
	body, ok := batchBody(line[at+len(kwDecodeBatch):])
	if !ok {
		return nil, false, false
	}
	*t = event.Throughput{DP: -1, Engine: -1, Server: ServerSGLang}
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
			} else if !ok {
				bad = true
			}
		case "#running-req":
			if n, ok := parseInt(val); ok {
				t.Running = int(n)
				t.Has |= event.HasRunning
			} else {
				bad = true
			}
		case "#queue-req":
			if n, ok := parseInt(val); ok {
				t.Queued = int(n)
				t.Has |= event.HasQueued
			} else {
				bad = true
			}
		case "#token", "#full token":
			if n, ok := parseInt(val); ok {
				t.Tokens = n
				t.Has |= event.HasTokens
			} else {
				bad = true
			}
		case "token usage", "full token usage":
			if f, ok := parseFloat(val); ok {
				t.TokenUsage = f
				t.Has |= event.HasTokenUsage
			} else {
				bad = true
			}
		case "accept len":
			if f, ok := parseFloat(val); ok {
				t.AcceptLength = f
				t.Has |= event.HasAcceptLength
			} else {
				bad = true
			}
		case "accept rate":
			if f, ok := parseFloat(val); ok {
				t.AcceptRate = f
				t.Has |= event.HasAcceptRate
			} else {
				bad = true
			}
		default:
			if bytes.HasSuffix(key, []byte(" graph")) {
				if b, ok := parseBool(val); ok {
					t.CUDAGraph = b
					t.Has |= event.HasCUDAGraph
				}
			} else {
				bad = true
			}
		}
	}
	if !haveRate {
		return nil, false, bad
	}
	prefix := line[:at]
	rank, dp := findRank(prefix)
	if rank != nil {
		t.Rank = internRank(rank)
	}
	t.DP = dp
	return findStamp(prefix), true, bad
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
	i := 1
	for i < len(rest) && rest[i] == ' ' {
		i++
	}
	return rest[i:], true
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

// ParseSGLangPrefill parses an SGLang "Prefill batch" line in the 2024–2026
// forms of research notes §1.3, with the same prefix and ANSI tolerance as
// ParseSGLangDecode. ok is false when the line is not a prefill line or has
// neither #new-seq nor #new-token. It does not allocate on other lines.
func ParseSGLangPrefill(line []byte) (event.Prefill, bool) {
	var p event.Prefill
	own := ownPrefixEnd(line)
	if own > 0 {
		if stamp, ok := ownPrefillLine(&p, line, own); ok {
			p.Stamp = string(stamp)
			return p, true
		}
	}
	if bytes.Index(line, kwPrefillBatch) < 0 {
		return event.Prefill{}, false // before buf, which costs a 1 KiB clear
	}
	var buf [cleanBufSize]byte
	stamp, ok := parseSGLangPrefill(&p, line, &buf, own)
	if !ok {
		return event.Prefill{}, false
	}
	if stamp != nil {
		p.Stamp = string(stamp)
	}
	return p, true
}

// parseSGLangPrefill is ParseSGLangPrefill returning the stamp as bytes;
// own as for parseSGLangDecode.
func parseSGLangPrefill(p *event.Prefill, line []byte, buf *[cleanBufSize]byte, own int) (stamp []byte, ok bool) {
	at := indexPrefillBatch(line, own)
	if at < 0 {
		return nil, false
	}
	ownAt := own > 0 && at == own
	line, at, cleaned := cleanFirst(line, at, kwPrefillBatch, buf, ownAt)
	if at < 0 {
		return nil, false
	}
	stamp, ok, bad := prefillFields(p, line, at, ownAt && !cleaned)
	if (!ok || bad) && !cleaned {
		if line, at = cleanAgain(line, kwPrefillBatch, buf); at >= 0 {
			stamp, ok, _ = prefillFields(p, line, at, false)
		}
	}
	return stamp, ok
}

func prefillFields(p *event.Prefill, line []byte, at int, own bool) (stamp []byte, ok, bad bool) {
	if stamp, ok, bad, sure := prefillFieldsFast(p, line, at, own); sure {
		return stamp, ok, bad
	}
	return prefillFieldsGeneral(p, line, at)
}

// prefillFieldsGeneral is prefillFields for any layout.
func prefillFieldsGeneral(p *event.Prefill, line []byte, at int) (stamp []byte, ok, bad bool) {
	body, ok := batchBody(line[at+len(kwPrefillBatch):])
	if !ok {
		return nil, false, false
	}
	*p = event.Prefill{DP: -1}
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
				p.Has |= event.HasNewSeq
			} else {
				bad = true
			}
		case "#new-token":
			if n, ok := parseInt(val); ok {
				p.NewTokens = n
				p.Has |= event.HasNewTokens
			} else {
				bad = true
			}
		case "#cached-token":
			if n, ok := parseInt(val); ok {
				p.CachedTokens = n
				p.Has |= event.HasCachedTokens
			} else {
				bad = true
			}
		case "cache hit rate":
			v, _ := cutSuffix(val, "%")
			if f, ok := parseFloat(v); ok {
				p.CacheHitRatePct = f
				p.Has |= event.HasCacheHitRate
			} else {
				bad = true
			}
		case "token usage", "full token usage":
			if f, ok := parseFloat(val); ok {
				p.TokenUsage = f
				p.Has |= event.HasPrefillTokenUsage
			} else {
				bad = true
			}
		case "#running-req":
			if n, ok := parseInt(val); ok {
				p.Running = int(n)
				p.Has |= event.HasPrefillRunning
			} else {
				bad = true
			}
		case "#queue-req":
			if n, ok := parseInt(val); ok {
				p.Queued = int(n)
				p.Has |= event.HasPrefillQueued
			} else {
				bad = true
			}
		case "input throughput (token/s)":
			if f, ok := parseFloat(val); ok {
				p.InputTokPerSec = f
				p.Has |= event.HasPrefillInputTokPerSec
			} else {
				bad = true
			}
		default:
			if bytes.HasSuffix(key, []byte(" graph")) {
				if b, ok := parseBool(val); ok {
					p.CUDAGraph = b
					p.Has |= event.HasPrefillCUDAGraph
				}
			} else {
				bad = true
			}
		}
	}
	if p.Has&(event.HasNewSeq|event.HasNewTokens) == 0 {
		return nil, false, bad
	}
	prefix := line[:at]
	rank, dp := findRank(prefix)
	if rank != nil {
		p.Rank = internRank(rank)
	}
	p.DP = dp
	return findStamp(prefix), true, bad
}
