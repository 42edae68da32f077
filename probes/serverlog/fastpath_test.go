package serverlog

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// checkFastPaths fails when a fast path disagrees with the general code on
// line: the batch-line field readers, the stamp matcher, the prefix
// shortcut of cleanFirst and the quiet filter.
func checkFastPaths(t *testing.T, line []byte) {
	t.Helper()
	if at := bytes.Index(line, kwDecodeBatch); at >= 0 {
		var ft, gt event.Throughput
		fstamp, fok, fbad, sure := decodeFieldsFast(&ft, line, at, at > 0 && at == ownPrefixEnd(line))
		gstamp, gok, gbad := decodeFieldsGeneral(&gt, line, at)
		if sure && (fok && !reflect.DeepEqual(ft, gt) || !bytes.Equal(fstamp, gstamp) || fok != gok || fbad != gbad) {
			t.Fatalf("decode fast path on %q:\n got %+v %q ok=%v bad=%v\nwant %+v %q ok=%v bad=%v", line, ft, fstamp, fok, fbad, gt, gstamp, gok, gbad)
		}
	}
	if at := bytes.Index(line, kwPrefillBatch); at >= 0 {
		var fp, gp event.Prefill
		fstamp, fok, fbad, sure := prefillFieldsFast(&fp, line, at, at > 0 && at == ownPrefixEnd(line))
		gstamp, gok, gbad := prefillFieldsGeneral(&gp, line, at)
		if sure && (fok && !reflect.DeepEqual(fp, gp) || !bytes.Equal(fstamp, gstamp) || fok != gok || fbad != gbad) {
			t.Fatalf("prefill fast path on %q:\n got %+v %q ok=%v bad=%v\nwant %+v %q ok=%v bad=%v", line, fp, fstamp, fok, fbad, gp, gstamp, gok, gbad)
		}
	}
	if got, want := isStamp(line), len(line) >= 19 && matchShape(line[:19], "dddd-dd-dd dd:dd:dd"); got != want {
		t.Fatalf("isStamp(%q) = %v", line, got)
	}
	own := ownPrefixEnd(line)
	if got, want := indexDecodeBatch(line, own), bytes.Index(line, kwDecodeBatch); got != want {
		t.Fatalf("indexDecodeBatch(%q) = %d, want %d", line, got, want)
	}
	if got, want := indexPrefillBatch(line, own), bytes.Index(line, kwPrefillBatch); got != want {
		t.Fatalf("indexPrefillBatch(%q) = %d, want %d", line, got, want)
	}
	if own > 0 {
		if sanitize.HasEscapes(line[:own]) || bytes.Contains(line[:own], kwDecodeBatch[:2]) || bytes.Contains(line[:own], kwPrefillBatch[:2]) {
			t.Fatalf("ownPrefixEnd(%q) = %d, but the prefix has escapes or a keyword start", line, own)
		}
		if !hasOwnPrefix(line) {
			t.Fatalf("ownPrefixEnd(%q) = %d without a stamp", line, own)
		}
	}
	var a, b analyzer
	if got, want := a.analyze(line, 7), b.analyzeFull(line, 7); !reflect.DeepEqual(got, want) {
		t.Fatalf("analyze(%q) with the quiet filter (quiet=%v):\n got %+v\nwant %+v", line, quiet(line, hasOwnPrefix(line)), got, want)
	}
}

func FuzzFastPathsMatchGeneral(f *testing.F) {
	addFixtureSeeds(f, false)
	for _, l := range fastPathLines {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFastPaths(t, line)
	})
}

// fastPathLines are batch lines in the layouts the fast paths read and
// near misses they must leave to the general code.
var fastPathLines = []string{
	"[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, #token: 186, token usage: 0.00, accept len: 1.95, accept rate: 0.49, cuda graph: True, gen throughput (token/s): 178.86, #queue-req: 0, ",
	"[2025-11-11 04:06:27] Decode batch, #running-req: 46, #token: 9000, token usage: 0.08, cuda graph: False, gen throughput (token/s): 1447.08, #queue-req: 0, ",
	"[2026-04-05 11:00:00 TP15] Decode batch [4120], #running-req: 31, #token: 9000, token usage: 0.08, cuda graph: True, gen throughput (token/s): 2210.40, #queue-req: 0",
	"[2026-04-05 11:00:00 TP16] Decode batch, #running-req: 31, gen throughput (token/s): 2210.40, #queue-req: 0",
	"[2025-04-03 20:06:34 DP1 TP0] Decode batch. #running-req: 64, #token: 50000, token usage: 0.40, gen throughput (token/s): 1500.25, #queue-req: 3",
	"[2026-07-04 08:00:01 TP0] Decode batch, #running-req: 4, #full token: 1200, full token usage: 0.01, npu graph: False, gen throughput (token/s): 95.50, #queue-req: 0",
	"[2025-12-26 06:08:29 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 112.51",
	"[2025-12-26 06:08:29 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 112, #queue-req: 0",
	"[2025-12-26 06:08:29 TP0] Decode batch, #running-req: 1.5, gen throughput (token/s): 1.0, #queue-req: 99999999999999999999",
	"[2025-12-26 06:08:29 TP0] Decode batch, gen throughput (token/s): 1234567890123456.78, cuda graph: maybe, ",
	"[2025-12-26 06:08:29 TP0] Decode batch, gen throughput (token/s): 1., #queue-req: 0",
	"[2025-12-26 06:08:29 TP0] Decode batch, #running-req: True, gen throughput (token/s): 5.00, #queue-req: 0,",
	"[2025-12-26 06:08:29 TP0] [32mDecode batch, gen throughput (token/s): 5.00, #queue-req: 0, ",
	"[2025-10-22 10:27:56 TP0] Prefill batch. #new-seq: 1, #new-token: 28, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ",
	"[2025-01-07 20:16:02 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 1, cache hit rate: 12.50%, token usage: 0.00, #running-req: 0, #queue-req: 0",
	"[2026-03-01 00:00:00 TP0] Prefill batch, #new-seq: 2, #new-token: 512, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0, input throughput (token/s): 559.53, cuda graph: True, ",
	"[2025-01-07 20:16:02 TP0] Prefill batch. #new-seq: 1, cache hit rate: 12.50, #queue-req: 0",
	"[2025-01-07 20:16:02 TP0] Prefill batch(mixed #running-req: 3). #new-seq: 1, #new-token: 7",
	"[2025-10-22 10:27:57] INFO:     127.0.0.1:45678 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
	"[2025-10-22 10:27:57] [1;31mRuntimeError: CUDA error: out of memory",
	"#033[2m[2025-12-26 06:08:29 TP0]#033[0m Killed",
	"x\x1b",
}

// TestFastPathsTakeSGLangLayouts keeps the fast paths honest: the layouts
// SGLang prints must not fall through to the general code unnoticed.
func TestFastPathsTakeSGLangLayouts(t *testing.T) {
	for _, l := range fastPathLines[:7] {
		line := []byte(l)
		at := bytes.Index(line, kwDecodeBatch)
		if _, _, _, sure := decodeFieldsFast(&event.Throughput{}, line, at, at == ownPrefixEnd(line)); !sure {
			t.Errorf("decode fast path gave up on %q", l)
		}
		checkFastPaths(t, line)
	}
	for _, l := range fastPathLines[13:16] {
		line := []byte(l)
		at := bytes.Index(line, kwPrefillBatch)
		if _, _, _, sure := prefillFieldsFast(&event.Prefill{}, line, at, at == ownPrefixEnd(line)); !sure {
			t.Errorf("prefill fast path gave up on %q", l)
		}
		checkFastPaths(t, line)
	}
	for _, l := range fastPathLines[:3] {
		line := []byte(l)
		body, _ := batchBody(line[bytes.Index(line, kwDecodeBatch)+len(kwDecodeBatch):])
		if !decodeLayout(body, &event.Throughput{}) {
			t.Errorf("decodeLayout refused %q", l)
		}
	}
	line := []byte(fastPathLines[13])
	body, _ := batchBody(line[bytes.Index(line, kwPrefillBatch)+len(kwPrefillBatch):])
	if !prefillLayout(body, &event.Prefill{}) {
		t.Errorf("prefillLayout refused %q", line)
	}
	for _, l := range fastPathLines[16:] {
		checkFastPaths(t, []byte(l))
	}
	for _, l := range append(benchOther[:], []byte(fastPathLines[18])) {
		if !quiet(l, hasOwnPrefix(l)) {
			t.Errorf("an ordinary line is not quiet: %q", l)
		}
	}
}

// TestQuietCoversKeywords checks that every keyword of every parser and
// failure signature contains a byte pair of the quiet filter, so that no
// line with one is filtered out.
func TestQuietCoversKeywords(t *testing.T) {
	kws := [][]byte{kwAvgGen, kwPrefillBatch, kwSpec, kwServingResult, kwWarmupPass, kwBenchPass, kwOBPrefill,
		kwSGLangReady, kwVLLMAPIServer, kwVLLMServer, kwUvicorn, kwTraceback, kwKilled,
		kwFileLine} // a frame needs kwFile and kwFileLine: one of them is enough
	for _, sigs := range [][][]byte{sigOOM, sigNCCL, sigIllegal, sigWatchdog, sigEngineDead, sigPortInUse, sigKilled, sigImport} {
		kws = append(kws, sigs...)
	}
	for _, kw := range kws {
		covered := false
		for _, p := range quietPairs {
			if len(p) != 2 {
				t.Fatalf("quiet pair %q is not two bytes", p)
			}
			covered = covered || bytes.Contains(kw, []byte(p))
		}
		if !covered {
			t.Errorf("no quiet pair in keyword %q", kw)
		}
		if quiet(kw, false) {
			t.Errorf("quiet(%q)", kw)
		}
	}
}

// TestQuietPairs checks what quiet's skipping of the stamp relies on: no
// pair starts with a byte of "2025-10-22 10:27:57".
func TestQuietPairs(t *testing.T) {
	for _, p := range quietPairs {
		if len(p) != 2 {
			t.Errorf("quiet pair %q is not two bytes", p)
		}
		if isDigit(p[0]) || p[0] == '-' || p[0] == ' ' || p[0] == ':' {
			t.Errorf("quiet pair %q starts with a byte of a timestamp", p)
		}
	}
}

// TestRankAsPrinted: a rank tag is kept as printed, also where it could
// be mistaken for an interned constant.
func TestRankAsPrinted(t *testing.T) {
	for _, tag := range []string{"TP0", "TP9", "TP10", "TP15", "TP16", "TP01", "TP007", "DP1 TP0"} {
		for _, prefix := range []string{"[2025-10-22 10:27:57 " + tag + "] ", "x [2025-10-22 10:27:57 " + tag + "] "} {
			line := prefix + "Decode batch, #running-req: 1, #token: 2, token usage: 0.01, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0, "
			tp, ok := ParseSGLangDecode([]byte(line))
			if !ok || tp.Rank != tag {
				t.Errorf("%q: rank %q (ok %v), want %q", line, tp.Rank, ok, tag)
			}
			checkFastPaths(t, []byte(line))
		}
	}
}
