package serverlog

import (
	"fmt"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"math"
	"testing"
	"time"
)

func sglangTP(stamp, rank string, tokS float64) event.Throughput {
	t, ok := ParseSGLangDecode([]byte(fmt.Sprintf("[%s %s] Decode batch. #running-req: 1, accept len: 2.00, gen throughput (token/s): %.2f, #queue-req: 0, ", stamp, rank, tokS)))
	if !ok {
		panic("bad test line")
	}
	return t
}

func rateValues(rs []event.TokRate) (vals []float64, dropped []bool) {
	for _, r := range rs {
		vals = append(vals, math.Round(r.TokPerSec*100)/100)
		dropped = append(dropped, r.Dropped)
	}
	return vals, dropped
}

func TestAggregatorIdleDrop(t *testing.T) {
	got := scanFixture(t, "sglang-decode-eagle3-2025-10.txt")
	var a Aggregator
	var rs []event.TokRate
	for _, v := range got.tput {
		rs = a.Add(rs, v)
	}
	rs = a.Flush(rs)
	vals, dropped := rateValues(rs)
	if fmt.Sprint(vals) != "[0.39 178.86 165.41 188.68 165.59]" || fmt.Sprint(dropped) != "[true false false false false]" {
		t.Errorf("eagle3: rates %v dropped %v; want the 0.39 idle artefact dropped", vals, dropped)
	}
	if !rs[1].HasAccept || rs[1].AcceptLength != 1.95 {
		t.Errorf("accept length = %v %v, want 1.95", rs[1].AcceptLength, rs[1].HasAccept)
	}

	// A busy stretch, 60 s idle, then the near-zero artefact again.
	var b Aggregator
	rs = nil
	for i, v := range []float64{100, 101, 99} {
		rs = b.Add(rs, sglangTP(fmt.Sprintf("2025-10-22 10:00:%02d", i), "TP0", v))
	}
	rs = b.Add(rs, sglangTP("2025-10-22 10:01:05", "TP0", 0.8))  // after idle
	rs = b.Add(rs, sglangTP("2025-10-22 10:01:06", "TP0", 98))   // steady again
	rs = b.Add(rs, sglangTP("2025-10-22 10:01:07", "TP0", 3.0))  // a real collapse without a gap: kept
	rs = b.Add(rs, sglangTP("2025-10-22 10:01:08", "TP1", 500))  // other TP ranks are ignored
	rs = b.Add(rs, sglangTP("2025-10-22 10:01:20", "TP0", 50.0)) // after a gap but not near zero: kept
	rs = b.Add(rs, sglangTP("2025-10-22 10:01:21", "TP0", 60.0))
	rs = b.Flush(rs)
	vals, dropped = rateValues(rs)
	if fmt.Sprint(vals) != "[100 101 99 0.8 98 3 50 60]" || fmt.Sprint(dropped) != "[false false false true false false false false]" {
		t.Errorf("rates %v dropped %v", vals, dropped)
	}

	// A lone first point at the end of input is kept when there is no
	// history, dropped when it is near zero against the history.
	var c Aggregator
	rs = c.Flush(c.Add(nil, sglangTP("2025-10-22 10:00:00", "TP0", 0.5)))
	if len(rs) != 1 || rs[0].Dropped {
		t.Errorf("lone point: %+v", rs)
	}
	var d Aggregator
	rs = nil
	for i := range 5 {
		rs = d.Add(rs, sglangTP(fmt.Sprintf("2025-10-22 10:00:%02d", i), "TP0", 100))
	}
	rs = d.Flush(d.Add(rs, sglangTP("2025-10-22 10:05:00", "TP0", 0.5)))
	if len(rs) != 6 || !rs[5].Dropped {
		t.Errorf("trailing idle artefact: %+v", rs)
	}
}

func TestAggregatorDPRounds(t *testing.T) {
	got := scanFixture(t, "sglang-pd-decode-custom-logfmt-2025-10.txt")
	var a Aggregator
	var rs []event.TokRate
	for _, v := range got.tput {
		rs = a.Add(rs, v)
	}
	if len(rs) != 0 {
		t.Fatalf("the first round closed before the ranks were known: %+v", rs)
	}
	rs = a.Flush(rs)
	if len(rs) != 1 || math.Abs(rs[0].TokPerSec-2701.81) > 1e-9 || rs[0].Ranks != 4 || math.Abs(rs[0].AcceptLength-1.92) > 1e-9 {
		t.Fatalf("rates %+v, want one 2701.81 over 4 ranks with mean accept 1.92", rs)
	}

	// Later rounds close as soon as every known rank reported; a repeat or a
	// later second closes a round early.
	var b Aggregator
	rs = nil
	line := func(sec, dp int, v float64) event.Throughput {
		return sglangTP(fmt.Sprintf("2025-10-20 03:02:%02d", sec), fmt.Sprintf("DP%d TP%d", dp, dp), v)
	}
	rs = b.Add(rs, line(1, 0, 10))
	rs = b.Add(rs, line(1, 1, 20))
	rs = b.Add(rs, line(2, 0, 11)) // DP0 repeats: round 1 closes (held: first of a busy period)
	if len(rs) != 0 {
		t.Fatalf("round 1 emitted before its successor: %+v", rs)
	}
	rs = b.Add(rs, line(2, 1, 21)) // all known ranks: closes now, and releases round 1
	if len(rs) != 2 || rs[0].TokPerSec != 30 || rs[0].Dropped || rs[1].TokPerSec != 32 || rs[1].Ranks != 2 {
		t.Fatalf("rounds 1 and 2: %+v", rs)
	}
	rs = b.Add(rs, line(3, 1, 22)) // DP0 idle this round
	rs = b.Add(rs, line(5, 1, 23)) // two seconds later: the round closes
	if len(rs) != 3 || rs[2].TokPerSec != 22 || rs[2].Ranks != 1 {
		t.Fatalf("round 3: %+v", rs)
	}
}

func TestAggregatorVLLM(t *testing.T) {
	mk := func(stamp string, engine int, v float64) event.Throughput {
		t, ok := ParseVLLMThroughput([]byte(fmt.Sprintf("INFO %s [loggers.py:87] Engine %03d: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: %.1f tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%%, Prefix cache hit rate: 0.0%%", stamp, engine, v)))
		if !ok {
			panic("bad test line")
		}
		return t
	}
	var a Aggregator
	var rs []event.TokRate
	rs = a.Add(rs, mk("06-16 10:03:14", 0, 0.0)) // vLLM's zeros are real: never dropped
	rs = a.Add(rs, mk("06-16 10:03:14", 1, 0.0))
	rs = a.Add(rs, mk("06-16 10:03:24", 0, 300))
	a.AddSpec(event.SpecDecode{MeanAcceptLength: 2.5, Has: HasMeanAcceptLength})
	rs = a.Add(rs, mk("06-16 10:03:24", 1, 200))
	rs = a.Flush(rs)
	vals, dropped := rateValues(rs)
	if fmt.Sprint(vals) != "[0 500]" || fmt.Sprint(dropped) != "[false false]" {
		t.Fatalf("vLLM engines: %v %v", vals, dropped)
	}
	if rs[0].HasAccept || !rs[1].HasAccept || rs[1].AcceptLength != 2.5 {
		t.Errorf("accept length from SpecDecoding: %+v", rs)
	}

	// V0: every line is a point, at once.
	got := scanFixture(t, "vllm-metrics-v0-metrics.py-2025-01.txt")
	var b Aggregator
	rs = nil
	for i, v := range got.tput {
		rs = b.Add(rs, v)
		if len(rs) != i+1 {
			t.Fatalf("V0 point %d not emitted at once", i)
		}
	}
}

// TestStampSecondsMatchesTimeDate: the day count is time.Date's, with and
// without a year, for every day of years around the eras' edges and for
// days past a month's end (which time.Date runs on into the next month).
func TestStampSecondsMatchesTimeDate(t *testing.T) {
	for _, year := range []int{0, 1, 4, 99, 100, 399, 400, 1600, 1900, 1969, 1970, 2000, 2024, 2025, 2100, 2400, 9999} {
		for mon := 1; mon <= 12; mon++ {
			for day := 1; day <= 31; day++ {
				want := time.Date(year, time.Month(mon), day, 23, 59, 58, 0, time.UTC).Unix()
				s := fmt.Sprintf("%04d-%02d-%02d 23:59:58", year, mon, day)
				if got, ok := stampSeconds(s); !ok || got != want {
					t.Fatalf("stampSeconds(%q) = %d, %v; want %d", s, got, ok, want)
				}
				if year == 0 {
					s = fmt.Sprintf("%02d-%02d 23:59:58", mon, day)
					if got, ok := stampSeconds(s); !ok || got != want {
						t.Fatalf("stampSeconds(%q) = %d, %v; want %d", s, got, ok, want)
					}
				}
			}
		}
	}
}
