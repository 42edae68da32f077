package serverlog

import "github.com/flightdeck-dev/flightdeck/sessions/event"

// Readers of the decode and prefill layouts SGLang's scheduler prints
// since 2025, keys in a fixed order: one pass, one literal comparison per
// key, numbers read while their end is found. See fastpath.go for how the
// fast paths relate to the general parsers.

// ownDecodeLine reads a line that is exactly SGLang's own prefix (own is
// ownPrefixEnd(line), > 0), "Decode batch", '.' or ',', one space and the
// 2025 decode layout (decodeLayout) into *t; ok is false for any other
// line. Every byte of such a line is accounted for, so it has no escape
// sequence and no other parser's keyword, and this is what
// parseSGLangDecode reads from it, without its searches.
func ownDecodeLine(t *event.Throughput, line []byte, own int) (stamp []byte, ok bool) {
	b := line[own:]
	if len(b) < 14 || string(b[:12]) != "Decode batch" || (b[12] != '.' && b[12] != ',') || b[13] != ' ' {
		return nil, false
	}
	*t = event.Throughput{DP: -1, Engine: -1, Server: ServerSGLang}
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
func ownPrefillLine(p *event.Prefill, line []byte, own int) (stamp []byte, ok bool) {
	b := line[own:]
	if len(b) < 15 || string(b[:13]) != "Prefill batch" || (b[13] != '.' && b[13] != ',') || b[14] != ' ' {
		return nil, false
	}
	*p = event.Prefill{DP: -1}
	if !prefillLayout(b[15:], p) {
		return nil, false
	}
	rank, dp, stamp := prefixRankStamp(line[:own], true)
	p.Rank, p.DP = rank, dp
	return stamp, true
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
func decodeLayout(b []byte, t *event.Throughput) bool {
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
	t.Has = event.HasRunning | event.HasTokens | event.HasTokenUsage | event.HasCUDAGraph | event.HasQueued
	var alen, arate uint64
	var alenF, arateF int
	if len(b) >= i+12 && string(b[i:i+12]) == "accept len: " {
		if alen, alenF, i, ok = layoutDecimal(b, i+12, false); !ok || len(b) < i+13 || string(b[i:i+13]) != "accept rate: " {
			return false
		}
		if arate, arateF, i, ok = layoutDecimal(b, i+13, false); !ok {
			return false
		}
		t.Has |= event.HasAcceptLength | event.HasAcceptRate
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
	if t.Has&event.HasAcceptLength != 0 {
		t.AcceptLength, t.AcceptRate = decimal(alen, alenF), decimal(arate, arateF)
	}
	return true
}

// prefillLayout is decodeLayout for a prefill line in the layout SGLang
// prints since 2025:
//
//	#new-seq: N, #new-token: N, #cached-token: N, token usage: F, #running-req: N, #queue-req: N[, ]
func prefillLayout(b []byte, p *event.Prefill) bool {
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
	p.Has = event.HasNewSeq | event.HasNewTokens | event.HasCachedTokens | event.HasPrefillTokenUsage | event.HasPrefillRunning | event.HasPrefillQueued
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
