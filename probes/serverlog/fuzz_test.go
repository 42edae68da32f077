package serverlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// addFixtureSeeds seeds a fuzz target with every line of every fixture.
func addFixtureSeeds(f *testing.F, whole bool) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if whole {
			f.Add(data)
			continue
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			f.Add(l)
		}
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// safeText fails when s could act on a terminal.
func safeText(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) || strings.ContainsAny(s, "\x1b\r\b\x00\x07\u009b\u202e") {
		t.Fatalf("%s is not sanitised: %q", what, s)
	}
}

func FuzzLineParsers(f *testing.F) {
	addFixtureSeeds(f, false)
	f.Add([]byte("[2025-10-22 10:27:57 DP1 TP0] Decode batch [7], #running-req: 1, gen throughput (token/s): 1e400, #queue-req: 0"))
	f.Add([]byte("Engine 9999999999: Avg prompt throughput: nan tokens/s, Avg generation throughput: inf tokens/s"))
	f.Add([]byte("SpecDecoding metrics: Per-position acceptance rate: , Avg Draft acceptance rate: %"))
	f.Fuzz(func(t *testing.T, line []byte) {
		if tp, ok := ParseSGLangDecode(line); ok {
			if !finite(tp.TokPerSec) || tp.TokPerSec < 0 || !utf8.ValidString(tp.Rank) || tp.Server != ServerSGLang {
				t.Fatalf("decode %q gave %+v", line, tp)
			}
			if !bytes.Contains(line, []byte("Decode batch")) && !bytes.Contains(line, []byte("Decode")) {
				t.Fatalf("decode result from a line without the keyword: %q", line)
			}
		}
		if tp, ok := ParseVLLMThroughput(line); ok {
			if !finite(tp.TokPerSec) || tp.TokPerSec < 0 || tp.Server != ServerVLLM {
				t.Fatalf("vLLM %q gave %+v", line, tp)
			}
		}
		if p, ok := ParseSGLangPrefill(line); ok && p.Has&(event.HasNewSeq|event.HasNewTokens) == 0 {
			t.Fatalf("prefill without counts: %q", line)
		}
		if s, ok := ParseVLLMSpecDecode(line); ok && s.Has&(HasDraftAcceptRate|HasMeanAcceptLength) == 0 {
			t.Fatalf("spec without rate or length: %q", line)
		}
		if r, ok := ParseReady(line); ok {
			safeText(t, "ready text", r.Text)
			safeText(t, "ready url", r.URL)
		}
	})
}

func FuzzClassifier(f *testing.F) {
	addFixtureSeeds(f, true)
	f.Add([]byte("Traceback (most recent call last):\n  File \"x\", line 1, in f\n    raise X\nX: CUDA out of memory\nKilled"))
	f.Add([]byte("Traceback (most recent call last):\n  File \"x.py\", line 3\n    def f()\n          ^\nSyntaxError: expected ':'\nImportError: cannot import name"))
	f.Fuzz(func(t *testing.T, text []byte) {
		var c Classifier
		var all []event.ServerFailure
		for i, l := range bytes.Split(text, []byte("\n")) {
			all = c.Feed(all, l, i+1)
		}
		for _, fl := range all {
			safeText(t, "failure text", fl.Text)
			safeText(t, "failure rank", fl.Rank)
			if bitOf(fl.Class) == 0 {
				t.Fatalf("unknown class %q", fl.Class)
			}
		}
		p, ok := c.Primary()
		if ok != (len(all) > 0) {
			t.Fatalf("primary %v found=%v with %d failures", p, ok, len(all))
		}
	})
}

func FuzzBenchTable(f *testing.F) {
	addFixtureSeeds(f, true)
	f.Fuzz(func(t *testing.T, text []byte) {
		var p BenchParser
		var got []event.LogBench
		for i, l := range bytes.Split(text, []byte("\n")) {
			if b, ok := p.Feed(l, i+1); ok {
				got = append(got, b)
			}
		}
		if b, ok := p.Flush(); ok {
			got = append(got, b)
		}
		for _, b := range got {
			if b.Has == 0 {
				t.Fatalf("empty result from %q", text)
			}
			safeText(t, "backend", b.Backend)
		}
	})
}

func FuzzWriteJSONL(f *testing.F) {
	addFixtureSeeds(f, true)
	f.Fuzz(func(t *testing.T, text []byte) {
		var out bytes.Buffer
		err := WriteJSONL(&out, bytes.NewReader(text))
		head := text[:min(len(text), sniffLen)]
		switch binary := sanitize.NotText(head, len(head) == sniffLen) != ""; {
		case binary && (!errors.Is(err, ErrBinaryInput) || out.Len() > 0):
			t.Fatalf("binary input: err %v, wrote %d bytes", err, out.Len())
		case !binary && err != nil:
			t.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatalf("invalid JSON record %q: %v", l, err)
			}
			if _, ok := m["type"].(string); !ok {
				t.Fatalf("record without type: %s", l)
			}
		}
		// The Aggregator takes whatever the scanner finds.
		var a Aggregator
		var rates []event.TokRate
		_, _ = Scan(bytes.NewReader(text), func(p event.Payload) {
			switch v := p.(type) {
			case event.Throughput:
				rates = a.Add(rates, v)
			case event.SpecDecode:
				a.AddSpec(v)
			}
		})
		for _, r := range a.Flush(rates) {
			if !finite(r.TokPerSec) && !math.IsInf(r.TokPerSec, 1) || r.Ranks < 1 {
				t.Fatalf("bad rate %+v", r)
			}
		}
	})
}
