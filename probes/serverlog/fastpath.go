package serverlog

import (
	"encoding/binary"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Fast paths for the lines that make up most of a busy SGLang log: the
// decode and prefill batch lines in the layouts SGLang prints itself. Each
// one either gives exactly the result of the general code or says it is
// not sure (sure = false, ok = false), and the caller then runs the
// general code; the fuzz target FuzzFastPathsMatchGeneral checks that.
// What they save is the general key/value splitter (a search per
// separator, a backward search per piece, a string switch per key) and the
// searches in the prefix. This file reads any order of the known keys;
// layout.go the 2025 layouts in order, prefix.go SGLang's line prefix.
//
// Literal tests are spelled len(b) >= n && string(b[:n]) == "literal"
// throughout: with the literal in place (16 bytes at most) the compiler
// compares loaded words, while through a helper taking the key as a
// parameter it calls memequal.

// Key ids of the fast tokenizer.
const (
	fkNone uint8 = iota
	fkRunning
	fkQueued
	fkToken
	fkTokenUsage
	fkAcceptLen
	fkAcceptRate
	fkGraph
	fkGenThroughput
	fkNewSeq
	fkNewToken
	fkCachedToken
	fkCacheHitRate
	fkInputThroughput
)

// First eight bytes of each key, little-endian (TestFastKeyConstants
// checks them against the keys).
const (
	k8RunningReq            = 0x676e696e6e757223 // '#running'
	k8Token                 = 0x203a6e656b6f7423 // '#token: '
	k8QueueReq              = 0x722d657565757123 // '#queue-r'
	k8NewSeq                = 0x7165732d77656e23 // '#new-seq'
	k8NewToken              = 0x6b6f742d77656e23 // '#new-tok'
	k8CachedToken           = 0x2d64656863616323 // '#cached-'
	k8FullToken             = 0x6f74206c6c756623 // '#full to'
	k8TokenUsage            = 0x7375206e656b6f74 // 'token us'
	k8FullTokenUsage        = 0x6b6f74206c6c7566 // 'full tok'
	k8AcceptLen             = 0x6c20747065636361 // 'accept l'
	k8AcceptRate            = 0x7220747065636361 // 'accept r'
	k8CudaGraph             = 0x6172672061647563 // 'cuda gra'
	k8CpuGraph              = 0x7061726720757063 // 'cpu grap'
	k8NpuGraph              = 0x706172672075706e // 'npu grap'
	k8CacheHitRate          = 0x6968206568636163 // 'cache hi'
	k8GenThroughputTokenS   = 0x6f726874206e6567 // 'gen thro'
	k8InputThroughputTokenS = 0x6874207475706e69 // 'input th'
)

// fastKey returns the id and length, ": " included, of the key that body
// starts with, among the keys the SGLang batch lines have printed since
// 2024; fkNone for any other key. Both batch forms share the table: a key
// that the line's kind does not read makes the caller give up. The first
// eight bytes of the keys differ, so one 8-byte load picks the candidate.
func fastKey(body []byte) (uint8, int) {
	if len(body) < 8 {
		return fkNone, 0
	}
	// The rest of the key after its first eight bytes, ": " included.
	rest := body[8:]
	var tail string
	var id uint8
	switch binary.LittleEndian.Uint64(body) {
	case k8RunningReq: // #running-req:
		tail, id = "-req: ", fkRunning
	case k8Token: // #token:
		tail, id = "", fkToken
	case k8QueueReq: // #queue-req:
		tail, id = "eq: ", fkQueued
	case k8NewSeq: // #new-seq:
		tail, id = ": ", fkNewSeq
	case k8NewToken: // #new-token:
		tail, id = "en: ", fkNewToken
	case k8CachedToken: // #cached-token:
		tail, id = "token: ", fkCachedToken
	case k8FullToken: // #full token:
		tail, id = "ken: ", fkToken
	case k8TokenUsage: // token usage:
		tail, id = "age: ", fkTokenUsage
	case k8FullTokenUsage: // full token usage:
		tail, id = "en usage: ", fkTokenUsage
	case k8AcceptLen: // accept len:
		tail, id = "en: ", fkAcceptLen
	case k8AcceptRate: // accept rate:
		tail, id = "ate: ", fkAcceptRate
	case k8CudaGraph: // cuda graph:
		tail, id = "ph: ", fkGraph
	case k8CpuGraph: // cpu graph:
		tail, id = "h: ", fkGraph
	case k8NpuGraph: // npu graph:
		tail, id = "h: ", fkGraph
	case k8CacheHitRate: // cache hit rate:
		tail, id = "t rate: ", fkCacheHitRate
	case k8GenThroughputTokenS: // gen throughput (token/s):
		tail, id = "ughput (token/s): ", fkGenThroughput
	case k8InputThroughputTokenS: // input throughput (token/s):
		tail, id = "roughput (token/s): ", fkInputThroughput
	default:
		return fkNone, 0
	}
	if len(rest) < len(tail) || string(rest[:len(tail)]) != tail {
		return fkNone, 0
	}
	return id, 8 + len(tail)
}

// scanNum reads the plain number at the start of v: digits, then
// optionally a '.' and at least one more digit. mant is the number without
// its '.' (valid up to 19 digits), digits counts every digit, frac those
// after the '.', -1 when there is no '.'. n is its length, 0 when v does
// not start with such a number.
func scanNum(v []byte) (mant uint64, digits, frac, n int) {
	for n < len(v) && isDigit(v[n]) {
		mant = mant*10 + uint64(v[n]-'0')
		n++
	}
	if n == 0 {
		return 0, 0, 0, 0
	}
	digits, frac = n, -1
	if n+1 < len(v) && v[n] == '.' && isDigit(v[n+1]) {
		n++
		d := n
		for n < len(v) && isDigit(v[n]) {
			mant = mant*10 + uint64(v[n]-'0')
			n++
		}
		frac = n - d
		digits += frac
	}
	return mant, digits, frac, n
}

// endsValue reports whether a value that ends at v[n] ends where the
// general splitter would cut it: at the end of the line or at ", ".
func endsValue(v []byte, n int) bool {
	return n == len(v) || (n+1 < len(v) && v[n] == ',' && v[n+1] == ' ')
}

// numFloat is parseFloat(val) for a number scanNum read from val.
func numFloat(val []byte, mant uint64, digits, frac int) (float64, bool) {
	if digits > 15 {
		return parseFloat(val)
	}
	return float64(int64(mant)) / pow10[max(frac, 0)], true // mant < 10^15
}

// numInt is parseInt(val) for a number scanNum read from val.
func numInt(mant uint64, digits, frac int) (int64, bool) {
	if frac >= 0 || digits > 18 {
		return 0, false
	}
	return int64(mant), true
}

// setInt stores a whole-number reading in *dst and marks bit in *has; it
// reports false, storing nothing, for a value that is not one.
func setInt[T ~int | ~int64, H ~uint16](dst *T, has *H, bit H, mant uint64, digits, frac int) bool {
	n, ok := numInt(mant, digits, frac)
	if ok {
		*dst, *has = T(n), *has|bit
	}
	return ok
}

// setFloat is setInt for a decimal reading.
func setFloat[H ~uint16](dst *float64, has *H, bit H, val []byte, mant uint64, digits, frac int) bool {
	f, ok := numFloat(val, mant, digits, frac)
	if ok {
		*dst, *has = f, *has|bit
	}
	return ok
}

// scanBool reads Python's True / False at the start of v; n is 0 for
// anything else.
func scanBool(v []byte) (b bool, n int) {
	switch {
	case len(v) >= 4 && string(v[:4]) == "True":
		return true, 4
	case len(v) >= 5 && string(v[:5]) == "False":
		return false, 5
	}
	return false, 0
}

// decodeFieldsFast is decodeFields for a line whose fields are all keys
// of fastKey with plain values. sure is false when the line has anything
// else; the other results are then meaningless. own says that line[:at] is
// the line's own prefix (see ownPrefixEnd).
func decodeFieldsFast(t *event.Throughput, line []byte, at int, own bool) (stamp []byte, ok, bad, sure bool) {
	body, ok := batchBody(line[at+len(kwDecodeBatch):])
	if !ok {
		return nil, false, false, true
	}
	*t = event.Throughput{DP: -1, Engine: -1, Server: ServerSGLang}
	if decodeLayout(body, t) {
		rank, dp, stamp := prefixRankStamp(line[:at], own)
		t.Rank, t.DP = rank, dp
		return stamp, true, false, true
	}
	*t = event.Throughput{DP: -1, Engine: -1, Server: ServerSGLang}
	haveRate := false
	for len(body) > 0 {
		k, kl := fastKey(body)
		v := body[kl:]
		if k == fkGraph {
			b, n := scanBool(v)
			if n == 0 || !endsValue(v, n) {
				return nil, false, false, false
			}
			t.CUDAGraph = b
			t.Has |= event.HasCUDAGraph
			body = v[min(n+2, len(v)):]
			continue
		}
		mant, digits, frac, n := scanNum(v)
		if n == 0 || !endsValue(v, n) {
			return nil, false, false, false
		}
		val, last := v[:n], n == len(v)
		body = v[min(n+2, len(v)):]
		// The same reads as decodeFieldsGeneral, key by key.
		switch k {
		case fkGenThroughput:
			// hasFraction(val) is frac > 0; f < 0 cannot happen.
			if f, ok := numFloat(val, mant, digits, frac); ok && !last && frac > 0 {
				t.TokPerSec, haveRate = f, true
			} else if !ok {
				bad = true
			}
		case fkRunning:
			bad = !setInt(&t.Running, &t.Has, event.HasRunning, mant, digits, frac) || bad
		case fkQueued:
			bad = !setInt(&t.Queued, &t.Has, event.HasQueued, mant, digits, frac) || bad
		case fkToken:
			bad = !setInt(&t.Tokens, &t.Has, event.HasTokens, mant, digits, frac) || bad
		case fkTokenUsage:
			bad = !setFloat(&t.TokenUsage, &t.Has, event.HasTokenUsage, val, mant, digits, frac) || bad
		case fkAcceptLen:
			bad = !setFloat(&t.AcceptLength, &t.Has, event.HasAcceptLength, val, mant, digits, frac) || bad
		case fkAcceptRate:
			bad = !setFloat(&t.AcceptRate, &t.Has, event.HasAcceptRate, val, mant, digits, frac) || bad
		default:
			return nil, false, false, false // another key, or a prefill key
		}
	}
	if !haveRate {
		return nil, false, bad, true
	}
	rank, dp, stamp := prefixRankStamp(line[:at], own)
	t.Rank, t.DP = rank, dp
	return stamp, true, bad, true
}

// prefillFieldsFast is prefillFields for a line whose fields are all keys
// of fastKey with plain values; sure as for decodeFieldsFast.
func prefillFieldsFast(p *event.Prefill, line []byte, at int, own bool) (stamp []byte, ok, bad, sure bool) {
	body, ok := batchBody(line[at+len(kwPrefillBatch):])
	if !ok {
		return nil, false, false, true
	}
	*p = event.Prefill{DP: -1}
	if prefillLayout(body, p) {
		rank, dp, stamp := prefixRankStamp(line[:at], own)
		p.Rank, p.DP = rank, dp
		return stamp, true, false, true
	}
	*p = event.Prefill{DP: -1}
	for len(body) > 0 {
		k, kl := fastKey(body)
		v := body[kl:]
		if k == fkGraph {
			b, n := scanBool(v)
			if n == 0 || !endsValue(v, n) {
				return nil, false, false, false
			}
			p.CUDAGraph = b
			p.Has |= event.HasPrefillCUDAGraph
			body = v[min(n+2, len(v)):]
			continue
		}
		mant, digits, frac, n := scanNum(v)
		val := v[:n]
		if k == fkCacheHitRate {
			// Printed as "12.50%"; the general code cuts the '%'.
			if n == 0 || n == len(v) || v[n] != '%' {
				return nil, false, false, false
			}
			n++
		}
		if n == 0 || !endsValue(v, n) {
			return nil, false, false, false
		}
		body = v[min(n+2, len(v)):]
		// The same reads as prefillFieldsGeneral, key by key.
		switch k {
		case fkNewSeq:
			bad = !setInt(&p.NewSeq, &p.Has, event.HasNewSeq, mant, digits, frac) || bad
		case fkNewToken:
			bad = !setInt(&p.NewTokens, &p.Has, event.HasNewTokens, mant, digits, frac) || bad
		case fkCachedToken:
			bad = !setInt(&p.CachedTokens, &p.Has, event.HasCachedTokens, mant, digits, frac) || bad
		case fkCacheHitRate:
			bad = !setFloat(&p.CacheHitRatePct, &p.Has, event.HasCacheHitRate, val, mant, digits, frac) || bad
		case fkTokenUsage:
			bad = !setFloat(&p.TokenUsage, &p.Has, event.HasPrefillTokenUsage, val, mant, digits, frac) || bad
		case fkRunning:
			bad = !setInt(&p.Running, &p.Has, event.HasPrefillRunning, mant, digits, frac) || bad
		case fkQueued:
			bad = !setInt(&p.Queued, &p.Has, event.HasPrefillQueued, mant, digits, frac) || bad
		case fkInputThroughput:
			bad = !setFloat(&p.InputTokPerSec, &p.Has, event.HasPrefillInputTokPerSec, val, mant, digits, frac) || bad
		default:
			return nil, false, false, false // another key, or a decode key
		}
	}
	if p.Has&(event.HasNewSeq|event.HasNewTokens) == 0 {
		return nil, false, bad, true
	}
	rank, dp, stamp := prefixRankStamp(line[:at], own)
	p.Rank, p.DP = rank, dp
	return stamp, true, bad, true
}
