// Package synthlog writes synthetic SGLang server logs of any size, for the
// parser's benchmarks (probes/serverlog BenchmarkVsGrep) and for timing
// `flightdeck parse log` against grep on a log of the size users have
// (issue 20: 540 MB, about 3.28 M lines).
//
// The lines are those of the real logs in ../shared/fixtures and
// probes/serverlog/testdata: a TP=8 start-up (per-rank init lines, weight
// loading, CUDA graph capture, uvicorn, "fired up"), then traffic. Traffic
// is busy periods separated by idle gaps: in a busy period each request
// brings a uvicorn access-log line and a prefill line (2025 layout, some
// with the v0.4.1 "cache hit rate"), and the running batch prints a decode
// line every 40 steps (with "accept len"/"accept rate" under speculative
// decoding in every other busy period, "Decode batch," with a comma as in late
// 2025); the first decode line after an idle gap reads near 0 tok/s (the
// idle artefact the cockpit drops). Health checks and other INFO lines
// come in between. The output depends only on the size: the same size
// gives the same bytes.
package synthlog

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Stats says what Write wrote.
type Stats struct {
	Bytes   int64 // bytes written
	Lines   int   // lines written, each ending in '\n'
	Decode  int   // SGLang decode lines (each contains "gen throughput")
	Prefill int   // SGLang prefill lines
}

// startup is a TP=8 SGLang start-up, from sglang-startup-multi-tp-2025-10
// and sglang-decode-cudagraph-2025-12; %s is the timestamp.
var startup = []string{
	"[%s] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3', tp_size=8, dp_size=1, speculative_algorithm='EAGLE3', port=30000)",
	"[%s TP0] Init torch distributed begin.",
	"[%s TP0] Init torch distributed ends. mem usage=1.96 GB",
	"[%s TP0] MOE_RUNNER_BACKEND is not initialized, the backend will be automatically selected",
	"[%s TP0] Load weight begin. avail mem=137.34 GB",
	"[%s TP0] Using model weights format ['*.safetensors']",
	"[%s TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=57.41 GB, mem usage=79.93 GB.",
	"[%s TP0] KV Cache is allocated. #tokens: 1283072, KV size: 41.87 GB",
	"[%s TP0] Memory pool end. avail mem=12.86 GB",
	"[%s TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=12.33 GB",
	"[%s TP0] Capture cuda graph end. Time elapsed: 41.97 s. mem usage=1.32 GB. avail mem=11.01 GB.",
	"[%s TP0] max_total_num_tokens=1283072, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=163840",
	"[%s] INFO:     Started server process [812]",
	"[%s] INFO:     Waiting for application startup.",
	"[%s] INFO:     Application startup complete.",
	"[%s] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
	"[%s] INFO:     127.0.0.1:53078 - \"GET /get_model_info HTTP/1.1\" 200 OK",
	"[%s TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ",
	"[%s] INFO:     127.0.0.1:53090 - \"POST /generate HTTP/1.1\" 200 OK",
	"[%s] The server is fired up and ready to roll!",
}

// noise are INFO lines of a serving SGLang that no parser reports.
var noise = []string{
	"[%s] INFO:     127.0.0.1:%d - \"GET /health_generate HTTP/1.1\" 200 OK",
	"[%s] INFO:     127.0.0.1:%d - \"GET /health HTTP/1.1\" 200 OK",
	"[%s] INFO:     127.0.0.1:%d - \"GET /v1/models HTTP/1.1\" 200 OK",
	"[%s TP0] Cache flushed successfully! (port %d)",
}

// Write writes about size bytes of log to w (whole lines: it stops after
// the line that reaches size) and reports what it wrote, or the first
// write error.
func Write(w io.Writer, size int64) (Stats, error) {
	g := gen{
		w:   bufio.NewWriterSize(w, 256<<10),
		r:   rand.New(rand.NewPCG(20, 540)),
		sec: 10 * 3600,
	}
	for _, l := range startup {
		g.printf(l, g.stamp())
		if strings.Contains(l, "Prefill batch") {
			g.st.Prefill++
		}
		if g.st.Bytes >= size {
			break
		}
	}
	for g.st.Bytes < size && g.err == nil {
		g.busy(size)
		g.sec += 11 + g.r.IntN(120) // idle: longer than the Aggregator's 10 s
	}
	if err := g.w.Flush(); g.err == nil {
		g.err = err
	}
	return g.st, g.err
}

type gen struct {
	w       *bufio.Writer
	r       *rand.Rand
	sec     int // seconds since midnight of the log's first day
	periods int // busy periods begun
	ticks   int // lines in the current second
	buf     []byte
	st      Stats
	err     error
}

// stamp is the timestamp of the next line: about 7 lines a second.
func (g *gen) stamp() string {
	if g.ticks++; g.ticks > 7 {
		g.ticks, g.sec = 0, g.sec+1
	}
	day, s := 21+g.sec/86400, g.sec%86400
	return fmt.Sprintf("2025-10-%02d %02d:%02d:%02d", day%28+1, s/3600, s/60%60, s%60)
}

func (g *gen) printf(format string, args ...any) {
	if g.err != nil {
		return
	}
	g.buf = fmt.Appendf(g.buf[:0], format, args...)
	g.buf = append(g.buf, '\n')
	n, err := g.w.Write(g.buf)
	g.st.Bytes += int64(n)
	g.st.Lines++
	g.err = err
}

// busy writes one busy period: requests arrive, are prefilled, and
// decode; the period ends when its requests are done (or at size).
func (g *gen) busy(size int64) {
	g.periods++
	spec := g.periods%2 == 0       // EAGLE-3 decoding every other period
	comma := g.periods%3 == 2      // "Decode batch," as in late 2025
	hitRate := g.periods%4 == 3    // v0.4.1's "cache hit rate" on prefill lines
	requests := 20 + g.r.IntN(400) // in this period
	running, tokens, first := 0, 0, true
	for done := 0; done < requests && g.st.Bytes < size && g.err == nil; {
		switch k := g.r.IntN(40); {
		case k < 6 && running < 256: // a request arrives
			running++
			g.printf(`[%s] INFO:     127.0.0.1:%d - "POST /v1/chat/completions HTTP/1.1" 200 OK`, g.stamp(), 30000+g.r.IntN(30000))
			newTok, cached := 1+g.r.IntN(4000), g.r.IntN(4000)
			usage := g.usage(tokens)
			if hitRate {
				g.printf("[%s TP0] Prefill batch. #new-seq: 1, #new-token: %d, #cached-token: %d, cache hit rate: %.2f%%, token usage: %s, #running-req: %d, #queue-req: %d",
					g.stamp(), newTok, cached, 100*float64(cached)/float64(newTok+cached), usage, running-1, g.r.IntN(64))
			} else {
				g.printf("[%s TP0] Prefill batch. #new-seq: 1, #new-token: %d, #cached-token: %d, token usage: %s, #running-req: %d, #queue-req: %d, ",
					g.stamp(), newTok, cached, usage, running-1, g.r.IntN(8))
			}
			g.st.Prefill++
			tokens += newTok + cached
		case k < 7: // something else
			g.printf(noise[g.r.IntN(len(noise))], g.stamp(), 30000+g.r.IntN(30000))
		default: // 40 decode steps of the running batch
			if running == 0 {
				continue
			}
			tokens += 40 * running
			rate := float64(running) * (40 + g.r.Float64()*60)
			if first { // tokens of 40 steps over the idle gap
				rate, first = 0.01+g.r.Float64()*0.5, false
			}
			batch := "Decode batch."
			if comma {
				batch = "Decode batch,"
			}
			if spec {
				acc := 1 + g.r.Float64()*2
				g.printf("[%s TP0] %s #running-req: %d, #token: %d, token usage: %s, accept len: %.2f, accept rate: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d, ",
					g.stamp(), batch, running, tokens, g.usage(tokens), acc, acc/4, rate, g.r.IntN(8))
			} else {
				g.printf("[%s TP0] %s #running-req: %d, #token: %d, token usage: %s, cuda graph: %s, gen throughput (token/s): %.2f, #queue-req: %d, ",
					g.stamp(), batch, running, tokens, g.usage(tokens), pyBool(running <= 160), rate, g.r.IntN(8))
			}
			g.st.Decode++
			if g.r.IntN(8) == 0 { // a request finishes
				running--
				tokens = tokens * running / (running + 1)
				done++
			}
		}
	}
}

// usage is the KV cache's token usage for tokens, as SGLang prints it.
func (g *gen) usage(tokens int) string {
	return strconv.FormatFloat(min(float64(tokens)/1283072, 0.99), 'f', 2, 64)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// ParseSize reads a byte count: a number with an optional unit, decimal
// (kB, MB, GB: 10^3, 10^6, 10^9) or binary (KiB, MiB, GiB: 2^10, 2^20,
// 2^30), such as "540MB" or "1GiB". It returns an error for anything else,
// and for sizes that are not positive.
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
	}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("synthlog: size %q: want a positive whole number of bytes with an optional unit (540MB, 1GiB)", s)
	}
	return n * mult, nil
}
