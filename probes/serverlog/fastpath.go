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
	// Each case compares the rest of its key as constant strings of at
	// most 16 bytes, which the compiler turns into loads, not calls.
	rest := body[8:]
	switch binary.LittleEndian.Uint64(body) {
	case k8RunningReq: // #running-req:
		if hasKey(rest, "-req: ") {
			return fkRunning, 14
		}
	case k8Token: // #token:
		return fkToken, 8
	case k8QueueReq: // #queue-req:
		if hasKey(rest, "eq: ") {
			return fkQueued, 12
		}
	case k8NewSeq: // #new-seq:
		if hasKey(rest, ": ") {
			return fkNewSeq, 10
		}
	case k8NewToken: // #new-token:
		if hasKey(rest, "en: ") {
			return fkNewToken, 12
		}
	case k8CachedToken: // #cached-token:
		if hasKey(rest, "token: ") {
			return fkCachedToken, 15
		}
	case k8FullToken: // #full token:
		if hasKey(rest, "ken: ") {
			return fkToken, 13
		}
	case k8TokenUsage: // token usage:
		if hasKey(rest, "age: ") {
			return fkTokenUsage, 13
		}
	case k8FullTokenUsage: // full token usage:
		if hasKey(rest, "en usage: ") {
			return fkTokenUsage, 18
		}
	case k8AcceptLen: // accept len:
		if hasKey(rest, "en: ") {
			return fkAcceptLen, 12
		}
	case k8AcceptRate: // accept rate:
		if hasKey(rest, "ate: ") {
			return fkAcceptRate, 13
		}
	case k8CudaGraph: // cuda graph:
		if hasKey(rest, "ph: ") {
			return fkGraph, 12
		}
	case k8CpuGraph: // cpu graph:
		if hasKey(rest, "h: ") {
			return fkGraph, 11
		}
	case k8NpuGraph: // npu graph:
		if hasKey(rest, "h: ") {
			return fkGraph, 11
		}
	case k8CacheHitRate: // cache hit rate:
		if hasKey(rest, "t rate: ") {
			return fkCacheHitRate, 16
		}
	case k8GenThroughputTokenS: // gen throughput (token/s):
		if len(rest) >= 18 && hasKey(rest, "ughput (token/s)") && hasKey(rest[16:], ": ") {
			return fkGenThroughput, 26
		}
	case k8InputThroughputTokenS: // input throughput (token/s):
		if len(rest) >= 20 && hasKey(rest, "roughput (token/") && hasKey(rest[16:], "s): ") {
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
	case hasKey(v, "True"):
		return true, 4
	case hasKey(v, "False"):
		return false, 5
	}
	return false, 0
}

func hasKey(b []byte, key string) bool {
	return len(b) >= len(key) && string(b[:len(key)]) == key
}

// decodeFieldsFast is decodeFields for a line whose fields are all keys
// of fastKey with plain values. sure is false when the line has anything
// else; the other results are then meaningless.
func decodeFieldsFast(line []byte, at int) (t Throughput, stamp []byte, ok, bad, sure bool) {
	body, ok := batchBody(line[at+len(kwDecodeBatch):])
	if !ok {
		return Throughput{}, nil, false, false, true
	}
	t = Throughput{DP: -1, Engine: -1, Server: ServerSGLang}
	haveRate := false
	for len(body) > 0 {
		k, kl := fastKey(body)
		v := body[kl:]
		if k == fkGraph {
			b, n := scanBool(v)
			if n == 0 || !endsValue(v, n) {
				return Throughput{}, nil, false, false, false
			}
			t.CUDAGraph = b
			t.Has |= HasCUDAGraph
			body = v[min(n+2, len(v)):]
			continue
		}
		mant, digits, frac, n := scanNum(v)
		if n == 0 || !endsValue(v, n) {
			return Throughput{}, nil, false, false, false
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
			return Throughput{}, nil, false, false, false // another key, or a prefill key
		}
	}
	if !haveRate {
		return Throughput{}, nil, false, bad, true
	}
	rank, dp, stamp := prefixRankStamp(line[:at])
	t.Rank, t.DP = rank, dp
	return t, stamp, true, bad, true
}

// prefillFieldsFast is prefillFields for a line whose fields are all keys
// of fastKey with plain values; sure as for decodeFieldsFast.
func prefillFieldsFast(line []byte, at int) (p Prefill, stamp []byte, ok, bad, sure bool) {
	body, ok := batchBody(line[at+len(kwPrefillBatch):])
	if !ok {
		return Prefill{}, nil, false, false, true
	}
	p = Prefill{DP: -1}
	for len(body) > 0 {
		k, kl := fastKey(body)
		v := body[kl:]
		if k == fkGraph {
			b, n := scanBool(v)
			if n == 0 || !endsValue(v, n) {
				return Prefill{}, nil, false, false, false
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
				return Prefill{}, nil, false, false, false
			}
			n++
		}
		if n == 0 || !endsValue(v, n) {
			return Prefill{}, nil, false, false, false
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
			return Prefill{}, nil, false, false, false // another key, or a decode key
		}
	}
	if p.Has&(HasNewSeq|HasNewTokens) == 0 {
		return Prefill{}, nil, false, bad, true
	}
	rank, dp, stamp := prefixRankStamp(line[:at])
	p.Rank, p.DP = rank, dp
	return p, stamp, true, bad, true
}

// prefixRankStamp returns the interned rank tag, DP rank and timestamp of a
// batch line's prefix, as findRank, internRank and findStamp do. SGLang's
// own prefixes "[2025-10-22 10:27:57] " and "[2025-10-22 10:27:57 TP3] "
// are read directly.
func prefixRankStamp(prefix []byte) (rank string, dp int, stamp []byte) {
	if len(prefix) >= 22 && prefix[0] == '[' && isStamp(prefix[1:]) {
		switch rest := prefix[20:]; {
		case len(rest) == 2 && rest[0] == ']' && rest[1] == ' ':
			return "", -1, prefix[1:20]
		case len(rest) >= 6 && len(rest) <= 7 && rest[0] == ' ' && rest[1] == 'T' && rest[2] == 'P' &&
			rest[len(rest)-2] == ']' && rest[len(rest)-1] == ' ':
			if n, ok := rankToken(rest[1 : len(rest)-2]); ok && n < len(tpTags) {
				return tpTags[n], -1, prefix[1:20]
			}
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

// indexAfterOwnPrefix is bytes.Index(line, kw) for a kw with a lower-case
// letter, looked for first right after SGLang's own prefix "[2025-10-22
// 10:27:57] " or "[2025-10-22 10:27:57 DP1 TP0] ": that prefix (digits,
// separators, capitals) cannot hold kw, so kw found there is the first.
func indexAfterOwnPrefix(line, kw []byte) int {
	if len(line) > 22 && line[0] == '[' && isStamp(line[1:]) {
		for j := 20; j < len(line)-1 && j < 40; j++ {
			c := line[j]
			if c == ']' {
				if line[j+1] == ' ' && bytes.HasPrefix(line[j+2:], kw) {
					return j + 2
				}
				break
			}
			if !(c == ' ' || isDigit(c) || c >= 'A' && c <= 'Z') {
				break
			}
		}
	}
	return bytes.Index(line, kw)
}
