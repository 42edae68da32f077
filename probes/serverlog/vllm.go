package serverlog

import (
	"bytes"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

var (
	kwAvgPrompt = []byte("Avg prompt throughput: ")
	kwAvgGen    = []byte("Avg generation throughput: ")
	kwEngine    = []byte("Engine ")
	kwSpecV0    = []byte("Speculative metrics: ")
	kwSpecV1    = []byte("SpecDecoding metrics: ")
	kwSpec      = []byte("Spec") // common to both spec forms: one scan for other lines
	kwPerPos    = []byte("Per-position acceptance rate: ")
	kwAvgDraft  = []byte(", Avg Draft acceptance rate: ")
)

// ParseVLLMThroughput parses a vLLM metrics line (research notes §2.2): the
// V0 llm_engine / engine/metrics.py form "Avg prompt throughput: X
// tokens/s, Avg generation throughput: Y tokens/s, Running: N reqs,
// Swapped: N reqs, Pending: N reqs, GPU KV cache usage: X%, CPU KV cache
// usage: X%[.]" and the V1 loggers.py form "Engine 000: Avg prompt
// throughput: ..., Running: N reqs, Waiting: N reqs, GPU KV cache usage:
// X%, Prefix cache hit rate: X%", behind any prefix ("INFO 01-22 18:27:20
// metrics.py:449] ", "INFO 03-18 09:04:46 [metrics.py:481] ",
// "(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] ").
//
// TokPerSec is "Avg generation throughput" (tok/s, the sparkline value),
// PromptTokPerSec "Avg prompt throughput" (tok/s), Running "Running",
// Queued "Waiting" (V1) or "Pending" (V0), TokenUsage "GPU KV cache usage"
// as a fraction 0–1, Engine the V1 engine index (-1 for V0). ok is false
// when the line is not a metrics line or its generation throughput lacks
// its " tokens/s" unit (a cut line). It does not allocate on other lines.
func ParseVLLMThroughput(line []byte) (event.Throughput, bool) {
	if bytes.Index(line, kwAvgGen) < 0 {
		return event.Throughput{}, false // before buf, which costs a 1 KiB clear
	}
	var buf [cleanBufSize]byte
	t, stamp, ok := parseVLLMThroughput(line, &buf)
	if ok && stamp != nil {
		t.Stamp = string(stamp)
	}
	return t, ok
}

// parseVLLMThroughput is ParseVLLMThroughput returning the stamp as bytes.
func parseVLLMThroughput(line []byte, buf *[cleanBufSize]byte) (event.Throughput, []byte, bool) {
	at := bytes.Index(line, kwAvgGen)
	if at < 0 {
		return event.Throughput{}, nil, false
	}
	line, at, cleaned := cleanFirst(line, at, kwAvgGen, buf, false)
	if at < 0 {
		return event.Throughput{}, nil, false
	}
	t, stamp, ok, bad := vllmFields(line, at)
	if (!ok || bad) && !cleaned {
		if line, at = cleanAgain(line, kwAvgGen, buf); at >= 0 {
			t, stamp, ok, _ = vllmFields(line, at)
		}
	}
	return t, stamp, ok
}

// vllmFields reads a metrics line whose "Avg generation throughput" is at
// line[genAt:]; the fields start at "Avg prompt throughput" when it is
// there.
func vllmFields(line []byte, genAt int) (t event.Throughput, stamp []byte, ok, bad bool) {
	at := bytes.LastIndex(line[:genAt], kwAvgPrompt)
	if at < 0 {
		at = genAt
	}
	t = event.Throughput{DP: -1, Engine: -1, Server: ServerVLLM}
	haveRate := false
	it := kvIter{rest: line[at:]}
	for {
		key, val, _, ok := it.next()
		if !ok {
			break
		}
		switch string(key) {
		case "Avg generation throughput":
			if v, ok := cutSuffix(val, "tokens/s"); ok {
				if f, ok := parseFloat(v); ok && f >= 0 {
					t.TokPerSec, haveRate = f, true
				}
			}
		case "Avg prompt throughput":
			if v, ok := cutSuffix(val, "tokens/s"); ok {
				if f, ok := parseFloat(v); ok {
					t.PromptTokPerSec = f
					t.Has |= event.HasPromptTokPerSec
				} else {
					bad = true
				}
			}
		case "Running":
			if v, ok := cutSuffix(val, "reqs"); ok {
				if n, ok := parseInt(v); ok {
					t.Running = int(n)
					t.Has |= event.HasRunning
				} else {
					bad = true
				}
			}
		case "Waiting", "Pending":
			if v, ok := cutSuffix(val, "reqs"); ok {
				if n, ok := parseInt(v); ok {
					t.Queued = int(n)
					t.Has |= event.HasQueued
				} else {
					bad = true
				}
			}
		case "GPU KV cache usage":
			if v, ok := cutSuffix(val, "%"); ok {
				if f, ok := parseFloat(v); ok {
					t.TokenUsage = f / 100
					t.Has |= event.HasTokenUsage
				} else {
					bad = true
				}
			}
		}
	}
	if !haveRate {
		return event.Throughput{}, nil, false, bad
	}
	prefix := line[:at]
	t.Engine = engineIndex(prefix)
	return t, findStamp(prefix), true, bad
}

// engineIndex reads "Engine 000: " at the end of a V1 prefix; -1 when
// absent.
func engineIndex(prefix []byte) int {
	i := bytes.LastIndex(prefix, kwEngine)
	if i < 0 {
		return -1
	}
	rest := prefix[i+len(kwEngine):]
	n, digits := 0, 0
	for digits < len(rest) && isDigit(rest[digits]) {
		n = n*10 + int(rest[digits]-'0')
		digits++
	}
	if digits == 0 || digits > 6 || len(rest) < digits+1 || rest[digits] != ':' {
		return -1
	}
	return n
}

const (
	HasMeanAcceptLength event.SpecFields = 1 << iota
	HasDraftAcceptRate
	HasAccepted
	HasDrafted
	HasEmitted
	HasSystemEfficiency
	HasNumSpecTokens
	HasAcceptedTokPerSec
	HasDraftedTokPerSec
	HasPerPosition
)

// ParseVLLMSpecDecode parses a vLLM speculative-decoding metrics line in
// the V0 form ("Speculative metrics: Draft acceptance rate: 0.607, System
// efficiency: 0.510, Number of speculative tokens: 4, Number of accepted
// tokens: 32594, Number of draft tokens: 53716, Number of emitted tokens:
// 34244.") and the V1 forms from 2025 ("SpecDecoding metrics: Draft
// acceptance rate: 100.0%, Accepted: 66 tokens, Drafted: 66 tokens") to
// now ("SpecDecoding metrics: Mean acceptance length: 1.00, Accepted
// throughput: 0.00 tokens/s, Drafted throughput: 1.23 tokens/s, Accepted: 0
// tokens, Drafted: 495 tokens, Per-position acceptance rate: 0.000, ...,
// Avg Draft acceptance rate: 0.0%"). ok is false for other lines and for a
// line with neither an acceptance rate nor a mean acceptance length. It
// allocates only for the per-position list.
func ParseVLLMSpecDecode(line []byte) (event.SpecDecode, bool) {
	if bytes.Index(line, kwSpec) < 0 {
		return event.SpecDecode{}, false // before buf, which costs a 1 KiB clear
	}
	var buf [cleanBufSize]byte
	sd, stamp, ok := parseVLLMSpecDecode(line, &buf)
	if ok && stamp != nil {
		sd.Stamp = string(stamp)
	}
	return sd, ok
}

// parseVLLMSpecDecode is ParseVLLMSpecDecode returning the stamp as bytes.
func parseVLLMSpecDecode(line []byte, buf *[cleanBufSize]byte) (event.SpecDecode, []byte, bool) {
	if bytes.Index(line, kwSpec) < 0 {
		return event.SpecDecode{}, nil, false
	}
	kw := kwSpecV1
	at := bytes.Index(line, kwSpecV1)
	if at < 0 {
		if at = bytes.Index(line, kwSpecV0); at < 0 {
			return event.SpecDecode{}, nil, false
		}
		kw = kwSpecV0
	}
	line, at, cleaned := cleanFirst(line, at, kw, buf, false)
	if at < 0 {
		return event.SpecDecode{}, nil, false
	}
	sd, ok, bad := specFields(line, at, kw)
	if (!ok || bad) && !cleaned {
		if l2, at2 := cleanAgain(line, kw, buf); at2 >= 0 {
			line, at = l2, at2
			sd, ok, _ = specFields(line, at, kw)
		}
	}
	if !ok {
		return event.SpecDecode{}, nil, false
	}
	return sd, findStamp(line[:at]), true
}

// specFields reads a spec-decode line whose keyword kw is at line[at:].
func specFields(line []byte, at int, kw []byte) (s event.SpecDecode, ok, bad bool) {
	body := line[at+len(kw):]
	s = event.SpecDecode{Engine: engineIndex(line[:at])}

	// Cut the per-position list out first: it is the one value that
	// contains ", " (notes §2.3). The pieces before and after it are
	// read as two segments.
	var tail []byte
	if p := bytes.Index(body, kwPerPos); p >= 0 {
		list := body[p+len(kwPerPos):]
		if e := bytes.Index(list, kwAvgDraft); e >= 0 {
			list, tail = list[:e], list[e+2:]
		}
		if pos, ok := parseFloatList(list); ok {
			s.PerPosition = pos
			s.Has |= HasPerPosition
		}
		body = body[:p]
	}

	it := kvIter{rest: body}
	for {
		key, val, _, ok := it.next()
		if !ok {
			if tail == nil {
				break
			}
			it, tail = kvIter{rest: tail}, nil
			continue
		}
		switch string(key) {
		case "Mean acceptance length":
			if f, ok := parseFloat(val); ok {
				s.MeanAcceptLength = f
				s.Has |= HasMeanAcceptLength
			} else {
				bad = true
			}
		case "Draft acceptance rate", "Avg Draft acceptance rate":
			v, pct := cutSuffix(val, "%")
			if f, ok := parseFloat(v); ok {
				if pct {
					f /= 100
				}
				s.DraftAcceptRate = f
				s.Has |= HasDraftAcceptRate
			} else {
				bad = true
			}
		case "System efficiency":
			if f, ok := parseFloat(val); ok {
				s.SystemEfficiency = f
				s.Has |= HasSystemEfficiency
			} else {
				bad = true
			}
		case "Number of speculative tokens":
			if n, ok := parseInt(val); ok {
				s.NumSpecTokens = int(n)
				s.Has |= HasNumSpecTokens
			} else {
				bad = true
			}
		case "Number of accepted tokens", "Accepted":
			v, _ := cutSuffix(val, "tokens")
			if n, ok := parseInt(v); ok {
				s.Accepted = n
				s.Has |= HasAccepted
			} else {
				bad = true
			}
		case "Number of draft tokens", "Drafted":
			v, _ := cutSuffix(val, "tokens")
			if n, ok := parseInt(v); ok {
				s.Drafted = n
				s.Has |= HasDrafted
			} else {
				bad = true
			}
		case "Number of emitted tokens":
			if n, ok := parseInt(val); ok {
				s.Emitted = n
				s.Has |= HasEmitted
			} else {
				bad = true
			}
		case "Accepted throughput":
			if v, ok := cutSuffix(val, "tokens/s"); ok {
				if f, ok := parseFloat(v); ok {
					s.AcceptedTokPerSec = f
					s.Has |= HasAcceptedTokPerSec
				} else {
					bad = true
				}
			} else {
				bad = true
			}
		case "Drafted throughput":
			if v, ok := cutSuffix(val, "tokens/s"); ok {
				if f, ok := parseFloat(v); ok {
					s.DraftedTokPerSec = f
					s.Has |= HasDraftedTokPerSec
				} else {
					bad = true
				}
			} else {
				bad = true
			}
		}
	}
	if s.Has&(HasDraftAcceptRate|HasMeanAcceptLength) == 0 {
		return event.SpecDecode{}, false, bad
	}
	return s, true, bad
}

// parseFloatList parses "0.983, 0.949, 0.915".
func parseFloatList(list []byte) ([]float64, bool) {
	list = trimValue(list)
	if len(list) == 0 {
		return nil, false
	}
	out := make([]float64, 0, bytes.Count(list, commaSpace)+1)
	for len(list) > 0 {
		var item []byte
		if i := bytes.Index(list, commaSpace); i >= 0 {
			item, list = list[:i], list[i+2:]
		} else {
			item, list = list, nil
		}
		f, ok := parseFloat(trimValue(item))
		if !ok {
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}
