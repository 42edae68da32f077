package serverlog

import (
	"bytes"
	"encoding/binary"
)

// Fast paths for the lines that make up most of a busy SGLang log: the
// decode and prefill batch lines in the layouts SGLang prints itself. Each
// one either gives exactly the result of the general code or says it is
// not sure (sure = false), and the caller then runs the general code; the
// fuzz target FuzzFastPathsMatchGeneral checks that. What they save is the
// general key/value splitter (a search per separator, a backward search per
// piece, a string switch per key) and the rank search in the prefix.

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
	// Each case compares the rest of its key with string literals (see
	// hasKey).
	rest := body[8:]
	switch binary.LittleEndian.Uint64(body) {
	case k8RunningReq: // #running-req:
		if len(rest) >= 6 && string(rest[:6]) == "-req: " {
			return fkRunning, 14
		}
	case k8Token: // #token:
		return fkToken, 8
	case k8QueueReq: // #queue-req:
		if len(rest) >= 4 && string(rest[:4]) == "eq: " {
			return fkQueued, 12
		}
	case k8NewSeq: // #new-seq:
		if len(rest) >= 2 && string(rest[:2]) == ": " {
			return fkNewSeq, 10
		}
	case k8NewToken: // #new-token:
		if len(rest) >= 4 && string(rest[:4]) == "en: " {
			return fkNewToken, 12
		}
	case k8CachedToken: // #cached-token:
		if len(rest) >= 7 && string(rest[:7]) == "token: " {
			return fkCachedToken, 15
		}
	case k8FullToken: // #full token:
		if len(rest) >= 5 && string(rest[:5]) == "ken: " {
			return fkToken, 13
		}
	case k8TokenUsage: // token usage:
		if len(rest) >= 5 && string(rest[:5]) == "age: " {
			return fkTokenUsage, 13
		}
	case k8FullTokenUsage: // full token usage:
		if len(rest) >= 10 && string(rest[:10]) == "en usage: " {
			return fkTokenUsage, 18
		}
	case k8AcceptLen: // accept len:
		if len(rest) >= 4 && string(rest[:4]) == "en: " {
			return fkAcceptLen, 12
		}
	case k8AcceptRate: // accept rate:
		if len(rest) >= 5 && string(rest[:5]) == "ate: " {
			return fkAcceptRate, 13
		}
	case k8CudaGraph: // cuda graph:
		if len(rest) >= 4 && string(rest[:4]) == "ph: " {
			return fkGraph, 12
		}
	case k8CpuGraph: // cpu graph:
		if len(rest) >= 3 && string(rest[:3]) == "h: " {
			return fkGraph, 11
		}
	case k8NpuGraph: // npu graph:
		if len(rest) >= 3 && string(rest[:3]) == "h: " {
			return fkGraph, 11
		}
	case k8CacheHitRate: // cache hit rate:
		if len(rest) >= 8 && string(rest[:8]) == "t rate: " {
			return fkCacheHitRate, 16
		}
	case k8GenThroughputTokenS: // gen throughput (token/s):
		if len(rest) >= 18 && string(rest[:16]) == "ughput (token/s)" && string(rest[16:18]) == ": " {
			return fkGenThroughput, 26
		}
	case k8InputThroughputTokenS: // input throughput (token/s):
		if len(rest) >= 20 && string(rest[:16]) == "roughput (token/" && string(rest[16:20]) == "s): " {
			return fkInputThroughput, 28
		}
	}
	return fkNone, 0
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

// hasKey reports whether b starts with key. The hot paths spell the test
// out instead, as len(b) >= n && string(b[:n]) == "literal": with the
// literal in place (at most 16 bytes) the compiler compares loaded words,
// while through this helper it calls memequal.
func hasKey(b []byte, key string) bool {
	return len(b) >= len(key) && string(b[:len(key)]) == key
}

// decodeFieldsFast is decodeFields for a line whose fields are all keys
// of fastKey with plain values. sure is false when the line has anything
// else; the other results are then meaningless. own says that line[:at] is
// the line's own prefix (see ownPrefixEnd).
func decodeFieldsFast(t *Throughput, line []byte, at int, own bool) (stamp []byte, ok, bad, sure bool) {
	body, ok := batchBody(line[at+len(kwDecodeBatch):])
	if !ok {
		return nil, false, false, true
	}
	*t = Throughput{DP: -1, Engine: -1, Server: ServerSGLang}
	if decodeLayout(body, t) {
		rank, dp, stamp := prefixRankStamp(line[:at], own)
		t.Rank, t.DP = rank, dp
		return stamp, true, false, true
	}
	*t = Throughput{DP: -1, Engine: -1, Server: ServerSGLang}
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
			t.Has |= HasCUDAGraph
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
			if n, ok := numInt(mant, digits, frac); ok {
				t.Running = int(n)
				t.Has |= HasRunning
			} else {
				bad = true
			}
		case fkQueued:
			if n, ok := numInt(mant, digits, frac); ok {
				t.Queued = int(n)
				t.Has |= HasQueued
			} else {
				bad = true
			}
		case fkToken:
			if n, ok := numInt(mant, digits, frac); ok {
				t.Tokens = n
				t.Has |= HasTokens
			} else {
				bad = true
			}
		case fkTokenUsage:
			if f, ok := numFloat(val, mant, digits, frac); ok {
				t.TokenUsage = f
				t.Has |= HasTokenUsage
			} else {
				bad = true
			}
		case fkAcceptLen:
			if f, ok := numFloat(val, mant, digits, frac); ok {
				t.AcceptLength = f
				t.Has |= HasAcceptLength
			} else {
				bad = true
			}
		case fkAcceptRate:
			if f, ok := numFloat(val, mant, digits, frac); ok {
				t.AcceptRate = f
				t.Has |= HasAcceptRate
			} else {
				bad = true
			}
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

// decodeLayout reads the fields of a decode line in the layout SGLang's
// scheduler has printed since 2025 (keys in this order, the accept pair
// only with speculative decoding):
//
//	#running-req: N, #token: N, token usage: F, [accept len: F, accept rate: F, ]cuda graph: B, gen throughput (token/s): F, #queue-req: N[, ]
//
// into t, and reports whether the line was exactly that. Each value is
// read as decodeFieldsGeneral reads it; a value that it would refuse, or
// read on the slow path, makes decodeLayout give up instead. i is the
// position in b throughout: the helpers return the next one.
func decodeLayout(b []byte, t *Throughput) bool {
	if len(b) < 14 || string(b[:14]) != "#running-req: " {
		return false
	}
	n, i, ok := layoutInt(b, 14)
	if !ok || len(b) < i+8 || string(b[i:i+8]) != "#token: " {
		return false
	}
	t.Running = int(n)
	if n, i, ok = layoutInt(b, i+8); !ok || len(b) < i+13 || string(b[i:i+13]) != "token usage: " {
		return false
	}
	t.Tokens = int64(n)
	// The decimals are divided out at the end, where the divisions do not
	// wait for each other.
	usage, usageF, i, ok := layoutDecimal(b, i+13, false)
	if !ok {
		return false
	}
	t.Has = HasRunning | HasTokens | HasTokenUsage | HasCUDAGraph | HasQueued
	var alen, arate uint64
	var alenF, arateF int
	if len(b) >= i+12 && string(b[i:i+12]) == "accept len: " {
		if alen, alenF, i, ok = layoutDecimal(b, i+12, false); !ok || len(b) < i+13 || string(b[i:i+13]) != "accept rate: " {
			return false
		}
		if arate, arateF, i, ok = layoutDecimal(b, i+13, false); !ok {
			return false
		}
		t.Has |= HasAcceptLength | HasAcceptRate
	}
	switch {
	case len(b) >= i+18 && string(b[i:i+16]) == "cuda graph: True" && string(b[i+16:i+18]) == ", ":
		t.CUDAGraph, i = true, i+18
	case len(b) >= i+19 && string(b[i:i+16]) == "cuda graph: Fals" && string(b[i+16:i+19]) == "e, ":
		i += 19
	default:
		return false
	}
	if len(b) < i+26 || string(b[i:i+16]) != "gen throughput (" || string(b[i+16:i+26]) != "token/s): " {
		return false
	}
	// A rate must have decimals and be followed by ", ": a log shipper
	// may have cut it otherwise.
	rate, rateF, i, ok := layoutDecimal(b, i+26, true)
	if !ok || len(b) < i+12 || string(b[i:i+12]) != "#queue-req: " {
		return false
	}
	if n, i, ok = layoutInt(b, i+12); !ok && !layoutEnd(b, i, n) {
		return false
	}
	if ok && i != len(b) {
		return false
	}
	t.Queued = int(n)
	t.TokenUsage = decimal(usage, usageF)
	t.TokPerSec = decimal(rate, rateF)
	if t.Has&HasAcceptLength != 0 {
		t.AcceptLength, t.AcceptRate = decimal(alen, alenF), decimal(arate, arateF)
	}
	return true
}

// prefillLayout is decodeLayout for a prefill line in the layout SGLang
// prints since 2025:
//
//	#new-seq: N, #new-token: N, #cached-token: N, token usage: F, #running-req: N, #queue-req: N[, ]
func prefillLayout(b []byte, p *Prefill) bool {
	if len(b) < 10 || string(b[:10]) != "#new-seq: " {
		return false
	}
	n, i, ok := layoutInt(b, 10)
	if !ok || len(b) < i+12 || string(b[i:i+12]) != "#new-token: " {
		return false
	}
	p.NewSeq = int(n)
	if n, i, ok = layoutInt(b, i+12); !ok || len(b) < i+15 || string(b[i:i+15]) != "#cached-token: " {
		return false
	}
	p.NewTokens = int64(n)
	if n, i, ok = layoutInt(b, i+15); !ok || len(b) < i+13 || string(b[i:i+13]) != "token usage: " {
		return false
	}
	p.CachedTokens = int64(n)
	usage, usageF, i, ok := layoutDecimal(b, i+13, false)
	if !ok || len(b) < i+14 || string(b[i:i+14]) != "#running-req: " {
		return false
	}
	p.TokenUsage = decimal(usage, usageF)
	if n, i, ok = layoutInt(b, i+14); !ok || len(b) < i+12 || string(b[i:i+12]) != "#queue-req: " {
		return false
	}
	p.Running = int(n)
	if n, i, ok = layoutInt(b, i+12); !ok && !layoutEnd(b, i, n) {
		return false
	}
	if ok && i != len(b) {
		return false
	}
	p.Queued = int(n)
	p.Has = HasNewSeq | HasNewTokens | HasCachedTokens | HasPrefillTokenUsage | HasPrefillRunning | HasPrefillQueued
	return true
}

// layoutInt reads what parseInt reads as an integer, 1 to 18 digits,
// at b[i:], and the ", " after it. next is the position after the ", ";
// when ok is false it is the position after the digits (see layoutEnd).
func layoutInt(b []byte, i int) (n uint64, next int, ok bool) {
	j := i
	for ; j < len(b); j++ {
		c := b[j] - '0'
		if c > 9 {
			break
		}
		n = n*10 + uint64(c)
	}
	if j == i || j-i > 18 {
		return 0, -1, false
	}
	if j+1 < len(b) && b[j] == ',' && b[j+1] == ' ' {
		return n, j + 2, true
	}
	return n, j, false
}

// layoutEnd reports whether layoutInt stopped at the end of b (at next)
// after reading an integer: the last field of a line without a trailing
// ", ".
func layoutEnd(b []byte, next int, n uint64) bool {
	return next == len(b) && next > 0 && b[next-1]-'0' <= 9
}

// layoutDecimal reads what parseFloat reads on its fast path, digits and
// optionally a '.' and more digits, 15 digits at most, at b[i:], and the
// ", " after it; with rate the '.' is required. The value is
// decimal(m, frac); next is the position after the ", ".
func layoutDecimal(b []byte, i int, rate bool) (m uint64, frac, next int, ok bool) {
	j := i
	for ; j < len(b); j++ {
		c := b[j] - '0'
		if c > 9 {
			break
		}
		m = m*10 + uint64(c)
	}
	if j == i {
		return 0, 0, 0, false
	}
	digits := j - i
	if j+1 < len(b) && b[j] == '.' && b[j+1]-'0' <= 9 {
		j++
		d := j
		for ; j < len(b); j++ {
			c := b[j] - '0'
			if c > 9 {
				break
			}
			m = m*10 + uint64(c)
		}
		frac = j - d
		digits += frac
	} else if rate {
		return 0, 0, 0, false
	}
	if digits > 15 || j+1 >= len(b) || b[j] != ',' || b[j+1] != ' ' {
		return 0, 0, 0, false
	}
	return m, frac, j + 2, true
}

// decimal is parseFloat's fast path: m (below 10^15) over 10^frac, one
// correctly rounded division.
func decimal(m uint64, frac int) float64 {
	return float64(int64(m)) / pow10[frac]
}

// prefillFieldsFast is prefillFields for a line whose fields are all keys
// of fastKey with plain values; sure as for decodeFieldsFast.
func prefillFieldsFast(p *Prefill, line []byte, at int, own bool) (stamp []byte, ok, bad, sure bool) {
	body, ok := batchBody(line[at+len(kwPrefillBatch):])
	if !ok {
		return nil, false, false, true
	}
	*p = Prefill{DP: -1}
	if prefillLayout(body, p) {
		rank, dp, stamp := prefixRankStamp(line[:at], own)
		p.Rank, p.DP = rank, dp
		return stamp, true, false, true
	}
	*p = Prefill{DP: -1}
	for len(body) > 0 {
		k, kl := fastKey(body)
		v := body[kl:]
		if k == fkGraph {
			b, n := scanBool(v)
			if n == 0 || !endsValue(v, n) {
				return nil, false, false, false
			}
			p.CUDAGraph = b
			p.Has |= HasPrefillCUDAGraph
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
			if n, ok := numInt(mant, digits, frac); ok {
				p.NewSeq = int(n)
				p.Has |= HasNewSeq
			} else {
				bad = true
			}
		case fkNewToken:
			if n, ok := numInt(mant, digits, frac); ok {
				p.NewTokens = n
				p.Has |= HasNewTokens
			} else {
				bad = true
			}
		case fkCachedToken:
			if n, ok := numInt(mant, digits, frac); ok {
				p.CachedTokens = n
				p.Has |= HasCachedTokens
			} else {
				bad = true
			}
		case fkCacheHitRate:
			if f, ok := numFloat(val, mant, digits, frac); ok {
				p.CacheHitRatePct = f
				p.Has |= HasCacheHitRate
			} else {
				bad = true
			}
		case fkTokenUsage:
			if f, ok := numFloat(val, mant, digits, frac); ok {
				p.TokenUsage = f
				p.Has |= HasPrefillTokenUsage
			} else {
				bad = true
			}
		case fkRunning:
			if n, ok := numInt(mant, digits, frac); ok {
				p.Running = int(n)
				p.Has |= HasPrefillRunning
			} else {
				bad = true
			}
		case fkQueued:
			if n, ok := numInt(mant, digits, frac); ok {
				p.Queued = int(n)
				p.Has |= HasPrefillQueued
			} else {
				bad = true
			}
		case fkInputThroughput:
			if f, ok := numFloat(val, mant, digits, frac); ok {
				p.InputTokPerSec = f
				p.Has |= HasPrefillInputTokPerSec
			} else {
				bad = true
			}
		default:
			return nil, false, false, false // another key, or a decode key
		}
	}
	if p.Has&(HasNewSeq|HasNewTokens) == 0 {
		return nil, false, bad, true
	}
	rank, dp, stamp := prefixRankStamp(line[:at], own)
	p.Rank, p.DP = rank, dp
	return stamp, true, bad, true
}

// ownDecodeLine reads a line that is exactly SGLang's own prefix (own is
// ownPrefixEnd(line), > 0), "Decode batch", '.' or ',', one space and the
// 2025 decode layout (decodeLayout) into *t; ok is false for any other
// line. Every byte of such a line is accounted for, so it has no escape
// sequence and no other parser's keyword, and this is what
// parseSGLangDecode reads from it, without its searches.
func ownDecodeLine(t *Throughput, line []byte, own int) (stamp []byte, ok bool) {
	b := line[own:]
	if len(b) < 14 || string(b[:12]) != "Decode batch" || (b[12] != '.' && b[12] != ',') || b[13] != ' ' {
		return nil, false
	}
	*t = Throughput{DP: -1, Engine: -1, Server: ServerSGLang}
	if !decodeLayout(b[14:], t) {
		return nil, false
	}
	rank, dp, stamp := prefixRankStamp(line[:own], true)
	t.Rank, t.DP = rank, dp
	return stamp, true
}

// ownPrefillLine is ownDecodeLine for "Prefill batch" and the 2025
// prefill layout: such a line has neither "Decode batch" nor "Avg
// generation throughput: ", so the prefill parser is the one that would
// read it, and this is what it reads.
func ownPrefillLine(p *Prefill, line []byte, own int) (stamp []byte, ok bool) {
	b := line[own:]
	if len(b) < 15 || string(b[:13]) != "Prefill batch" || (b[13] != '.' && b[13] != ',') || b[14] != ' ' {
		return nil, false
	}
	*p = Prefill{DP: -1}
	if !prefillLayout(b[15:], p) {
		return nil, false
	}
	rank, dp, stamp := prefixRankStamp(line[:own], true)
	p.Rank, p.DP = rank, dp
	return stamp, true
}

// prefixRankStamp returns the interned rank tag, DP rank and timestamp of a
// batch line's prefix, as findRank, internRank and findStamp do. own says
// that prefix is the line's own prefix (see ownPrefixEnd); then
// "[2025-10-22 10:27:57] " and "[2025-10-22 10:27:57 TP3] " are read
// directly.
func prefixRankStamp(prefix []byte, own bool) (rank string, dp int, stamp []byte) {
	if own {
		// rest ends in "] "; "TP1".."TP9" and "TP10".."TP15" are what
		// internRank keeps as constants.
		switch rest := prefix[20:]; {
		case len(rest) == 2:
			return "", -1, prefix[1:20]
		case len(rest) == 6 && string(rest[:3]) == " TP" && isDigit(rest[3]):
			return tpTags[rest[3]-'0'], -1, prefix[1:20]
		case len(rest) == 7 && string(rest[:4]) == " TP1" && rest[4] >= '0' && rest[4] <= '5':
			return tpTags[10+rest[4]-'0'], -1, prefix[1:20]
		}
	}
	r, dp := findRank(prefix)
	if r != nil {
		rank = internRank(r)
	}
	return rank, dp, findStamp(prefix)
}

// Templates for isStamp: the separators of "dddd-dd-dd dd:dd:dd" and '0'
// in the digit places, as little-endian words over bytes 0–7, 8–15 and
// 11–18; the masks select the separator places.
const (
	stampTmpl0 = 0x2d30302d30303030 // "0000-00-"
	stampTmpl1 = 0x30303a3030203030 // "00 00:00"
	stampTmpl2 = 0x30303a30303a3030 // "00:00:00"
	stampSep0  = 0xff0000ff00000000
	stampSep1  = 0x0000ff0000ff0000
	stampSep2  = 0x0000ff0000ff0000
)

// isStamp reports whether b starts with a timestamp of the shape
// "dddd-dd-dd dd:dd:dd" (d a digit): matchShape(b[:19], ...), eight bytes
// at a time.
func isStamp(b []byte) bool {
	if len(b) < 19 {
		return false
	}
	return stampWord(binary.LittleEndian.Uint64(b), stampTmpl0, stampSep0) &&
		stampWord(binary.LittleEndian.Uint64(b[8:]), stampTmpl1, stampSep1) &&
		stampWord(binary.LittleEndian.Uint64(b[11:]), stampTmpl2, stampSep2)
}

// stampWord checks eight bytes against a template: the separator places
// equal, every other byte a digit. x^tmpl is 0–9 exactly for a digit; a
// byte under 10 plus 0x76 stays under 0x80, and a byte that overflows
// into the next one has its top bit set already.
func stampWord(w, tmpl, sep uint64) bool {
	x := w ^ tmpl
	return x&sep == 0 && ((x+0x7676767676767676)|x)&0x8080808080808080 == 0
}

// ownPrefixEnd returns the length of SGLang's own line prefix
// "[2025-10-22 10:27:57] " or "[2025-10-22 10:27:57 DP1 TP0] " at the start
// of line: '[', a timestamp, spaces, digits and capitals, "] ". It is 0
// when line does not start with one. Such a prefix holds no lower-case
// letter, '[' (but the first), '#' or ESC, which the parsers use: a
// keyword with a lower-case letter found right after it is its first
// occurrence, and it has no escape sequence (the '[' before four digits
// starts none).
func ownPrefixEnd(line []byte) int {
	if len(line) < 22 || line[0] != '[' || !isStamp(line[1:]) {
		return 0
	}
	// "] " and " TP3] ", the usual ends, directly.
	if line[20] == ']' && line[21] == ' ' {
		return 22
	}
	if len(line) >= 26 && string(line[20:23]) == " TP" && isDigit(line[23]) && line[24] == ']' && line[25] == ' ' {
		return 26
	}
	for j := 20; j < len(line)-1 && j < 40; j++ {
		switch c := line[j]; {
		case c == ']':
			if line[j+1] == ' ' {
				return j + 2
			}
			return 0
		case c != ' ' && !isDigit(c) && (c < 'A' || c > 'Z'):
			return 0
		}
	}
	return 0
}

// indexDecodeBatch is bytes.Index(line, kwDecodeBatch), checked first
// right after the line's own prefix (own from ownPrefixEnd).
func indexDecodeBatch(line []byte, own int) int {
	// A string literal, not kwDecodeBatch: see hasKey.
	if b := line[own:]; own > 0 && len(b) >= 12 && string(b[:12]) == "Decode batch" {
		return own
	}
	return bytes.Index(line, kwDecodeBatch)
}

// indexPrefillBatch is indexDecodeBatch for kwPrefillBatch.
func indexPrefillBatch(line []byte, own int) int {
	if b := line[own:]; own > 0 && len(b) >= 13 && string(b[:13]) == "Prefill batch" {
		return own
	}
	return bytes.Index(line, kwPrefillBatch)
}
