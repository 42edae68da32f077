package serverlog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog/synthlog"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// checkFastJSON fails when jsonFast writes a record for line that is not
// byte for byte what the general way (analyze, then appendPayload)
// writes, or gives a decode point that differs from the Throughput's.
// It reports whether the fast path took the line.
func checkFastJSON(t *testing.T, line []byte) bool {
	t.Helper()
	own := ownPrefixEnd(line)
	if own == 0 {
		return false
	}
	var an analyzer
	var p tputPoint
	got, kind := jsonFast([]byte("x"), &an, line, own, 42, &p)
	if kind == fastNone {
		if string(got) != "x" {
			t.Fatalf("jsonFast(%q) gave up but wrote %q", line, got)
		}
		return false
	}
	info := an.analyze(line, 42)
	want := append([]byte("x"), appendPayload(nil, info.found)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("jsonFast(%q):\n got %s\nwant %s", line, got, want)
	}
	if kind == fastPrefill && !bytes.Contains(line, []byte("cache hit rate")) {
		// (The two-pass form reads only the 2025 layout.)
		if two, ok := appendOwnPrefillJSON([]byte("x"), line, own, 42); !ok || !bytes.Equal(two, want) {
			t.Fatalf("appendOwnPrefillJSON(%q) = %s, %v; want %s", line, two, ok, want)
		}
	}
	if kind == fastDecode {
		// The two-pass form, which jsonFast tries second, on its own.
		var p2 tputPoint
		if two, ok := appendOwnDecodeJSON([]byte("x"), &an, line, own, 42, &p2); !ok || !bytes.Equal(two, want) || p2 != p {
			t.Fatalf("appendOwnDecodeJSON(%q) = %s, %v, point %+v; want %s, point %+v", line, two, ok, p2, want, p)
		}
	}
	if kind == fastDecode {
		tp := info.found.(event.Throughput)
		want := tputPoint{
			tokS: tp.TokPerSec, accept: tp.AcceptLength, stamp: tp.Stamp, line: tp.Line, key: tp.DP,
			hasAccept: tp.Has&event.HasAcceptLength != 0, counts: tp.DP >= 0 || isTP0OrNone(tp.Rank),
		}
		if p != want {
			t.Fatalf("jsonFast(%q) point %+v, want %+v", line, p, want)
		}
	}
	return true
}

func TestFastJSONMatchesPayload(t *testing.T) {
	took := 0
	for _, l := range fastPathLines {
		if checkFastJSON(t, []byte(l)) {
			took++
		}
	}
	for _, text := range fixtureTexts(t) {
		for _, l := range bytes.Split(text, []byte("\n")) {
			if checkFastJSON(t, trimCR(l)) {
				took++
			}
		}
	}
	// Numbers whose text is not what the JSON holds, and the edges of
	// the copy rule.
	for _, num := range []string{"0.00", "0.10", "007.50", "00", "1.000000", "0.000001", "0.0000001", "0.0000010", "123456789012345", "12345678901234.5", "0.123456789", "0.1234567891", "9.99"} {
		for _, l := range []string{
			"[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 01, #token: 0186, token usage: %[1]s, accept len: %[1]s, accept rate: %[1]s, cuda graph: True, gen throughput (token/s): %[1]s, #queue-req: 00, ",
			"[2025-10-22 10:27:57] Decode batch, #running-req: 1, #token: 186, token usage: %[1]s, cuda graph: False, gen throughput (token/s): %[1]s, #queue-req: 0",
			"[2025-10-22 10:27:57 DP1 TP3] Decode batch. #running-req: 1, #token: 186, token usage: %[1]s, cuda graph: False, gen throughput (token/s): 1.5, #queue-req: 0, ",
			"[2025-10-22 10:27:56 TP0] Prefill batch. #new-seq: 01, #new-token: 28, #cached-token: 000, token usage: %[1]s, #running-req: 0, #queue-req: 0, ",
			"[2025-10-22 10:27:56 TP12] Prefill batch, #new-seq: 1, #new-token: 28, #cached-token: 0, token usage: %[1]s, #running-req: 0, #queue-req: 7",
		} {
			if checkFastJSON(t, fmt.Appendf(nil, l, num)) {
				took++
			}
		}
	}
	if took < 50 {
		t.Errorf("the fast path took only %d lines", took)
	}
}

// TestFastJSONSyntheticLog: the generated benchmark log, every line.
func TestFastJSONSyntheticLog(t *testing.T) {
	var buf bytes.Buffer
	st, err := synthlog.Write(&buf, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	took, want, onePass := 0, st.Decode, 0
	var an analyzer
	var p tputPoint
	for _, l := range bytes.Split(buf.Bytes(), []byte("\n")) {
		if checkFastJSON(t, l) {
			took++
		}
		if own := ownPrefixEnd(l); own > 0 {
			_, dok := appendDecodeRecord(nil, &an, l, own, 1, &p)
			_, pok := appendPrefillRecord(nil, &an, l, own, 1)
			if dok || pok {
				onePass++
			}
		}
		if bytes.Contains(l, []byte("Prefill batch")) {
			want++
		}
	}
	if took != want || onePass != want {
		t.Errorf("fast path took %d lines, its one-pass form %d, want %d (%d decode lines)", took, onePass, want, st.Decode)
	}
}

func FuzzFastJSONMatchesPayload(f *testing.F) {
	for _, l := range fastPathLines {
		f.Add([]byte(l))
	}
	f.Add([]byte("[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, #token: 186, token usage: 0.0000001, cuda graph: True, gen throughput (token/s): 0.000000, #queue-req: 0, "))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFastJSON(t, line)
	})
}

// TestWriteJSONLSyntheticLogMatchesReference: WriteJSONL's output for the
// generated benchmark log is byte for byte that of the reference (every
// line through Scanner.Feed, each finding through appendPayload, then the
// idle marker), with real blocks and with small ones that cut the log in
// many places.
func TestWriteJSONLSyntheticLogMatchesReference(t *testing.T) {
	var buf bytes.Buffer
	if _, err := synthlog.Write(&buf, 12<<20); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	found, failures := scanSequential(data)
	want := encodeSequential(found)
	// The log has the idle artefacts that the marker holds records for.
	if len(failures) != 0 || len(want) < len(data)/2 || bytes.Count(want, []byte(`"idle_artifact":true`)) < 10 {
		t.Fatalf("reference: %d failures, %d bytes of JSONL, %d idle artefacts", len(failures), len(want), bytes.Count(want, []byte(`"idle_artifact":true`)))
	}
	var got bytes.Buffer
	if err := WriteJSONL(&got, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("WriteJSONL differs from the reference (%d and %d bytes)", got.Len(), len(want))
	}
	checkSameScan(t, "synthetic", data[:2<<20], 3, 4093)
}

// TestRecordEndCounts: the line numbers that recordEnd adds up are
// strconv's, through every carry, after jumps and from any start.
func TestRecordEndCounts(t *testing.T) {
	var e recordEnd
	r := rand.New(rand.NewPCG(1, 2))
	n := 0
	for i := range 200000 {
		switch {
		case i%5000 == 0:
			n = r.IntN(1 << 40) // a jump
		case i%3 == 0:
			n += r.IntN(10)
		default:
			n += 1 + r.IntN(3)
		}
		if i == 100 {
			n = 99999990
		}
		if e.set(n); string(e.text()) != strconv.Itoa(n)+"}\n" {
			t.Fatalf("step %d: set(%d) gives %q", i, n, e.text())
		}
	}
	for _, n := range []int{0, 9, 10, 8, -3, 1<<63 - 1, 1<<63 - 1} {
		if e.set(n); string(e.text()) != strconv.Itoa(n)+"}\n" {
			t.Fatalf("set(%d) gives %q", n, e.text())
		}
	}
}
