package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// inProcServer runs the server role in this process (fast, no exec).
type inProcServer struct {
	out    syncBuffer
	addr   string
	cancel context.CancelFunc
	done   chan int
	once   sync.Once
	code   int
}

func runInProc(t *testing.T, dir string, environ []string, args ...string) *inProcServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &inProcServer{cancel: cancel, done: make(chan int, 1)}
	addr := make(chan string, 1)
	go func() {
		s.done <- runServer(ctx, args, serverEnv{dir: dir, stdout: &s.out, stderr: &s.out, environ: environ,
			ready: func(a string) { addr <- a }})
	}()
	t.Cleanup(func() { s.stop() })
	select {
	case s.addr = <-addr:
	case code := <-s.done:
		t.Fatalf("server exited %d before binding:\n%s", code, s.out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not bind:\n%s", s.out.String())
	}
	return s
}

// stop is SIGTERM: cancel the context and wait for the exit status.
func (s *inProcServer) stop() int {
	s.once.Do(func() { s.cancel(); s.code = <-s.done })
	return s.code
}

func (s *inProcServer) url(path string) string { return "http://" + s.addr + path }

// fakeRepo writes just pynccl.py, good or regressed.
func fakeRepo(t *testing.T, regressed bool) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, PyncclPath)
	os.MkdirAll(filepath.Dir(p), 0o755)
	body := pyncclGood
	if regressed {
		body = pyncclBad
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func profileEnv() []string {
	var env []string
	for _, k := range slices.Sorted(maps.Keys(NCCLProfile())) {
		env = append(env, k+"="+NCCLProfile()[k])
	}
	return env
}

var decodeRE = regexp.MustCompile(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (TP\d+|DP\d+ TP\d+)\] Decode batch\. #running-req: \d+, #token: \d+, token usage: \d\.\d\d, (accept len: (\d\.\d\d), accept rate: (0\.\d\d), )?cuda graph: True, gen throughput \(token/s\): (\d+\.\d\d), #queue-req: 0, $`)

type decodeLine struct {
	rank      string
	tokS      float64
	acceptLen float64
}

// decodeLines reads the decode lines out of a log, checking each one's format.
func decodeLines(t *testing.T, log string) []decodeLine {
	t.Helper()
	var out []decodeLine
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "Decode batch") {
			continue
		}
		m := decodeRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("malformed decode line %q", l)
		}
		d := decodeLine{rank: m[1]}
		d.tokS, _ = strconv.ParseFloat(m[5], 64)
		if m[3] != "" {
			d.acceptLen, _ = strconv.ParseFloat(m[3], 64)
		}
		out = append(out, d)
	}
	return out
}

func TestServerSpeedModel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       []string
		regressed bool
		eagle     bool
		want      float64
	}{
		{"no NCCL tuning", nil, false, false, 62.5},
		{"partial profile", profileEnv()[:5], false, false, 62.5},
		{"full profile", profileEnv(), false, false, 89},
		{"profile on the regressing tree", profileEnv(), true, false, 89 * 0.92},
		{"EAGLE-3 tuned", profileEnv(), false, true, 94},
		{"EAGLE-3 regressed", profileEnv(), true, true, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--port", "0", "--repo", fakeRepo(t, tc.regressed), "--time-scale", "50",
				"--startup-delay", "0.5", "--seed", "42", "--tp-size", "8"}
			if tc.eagle {
				args = append(args, "--speculative-algorithm", "EAGLE3")
			}
			s := runInProc(t, "", tc.env, args...)
			waitFor(t, 60*time.Second, "40 decode lines", func() bool { return strings.Count(s.out.String(), "Decode batch") >= 41 })
			s.stop()
			lines := decodeLines(t, s.out.String())
			// Drop the near-zero first line after start-up, as a parser does.
			var sum, acc float64
			n := 0
			for _, d := range lines {
				if d.tokS < tc.want/2 {
					continue
				}
				sum += d.tokS
				acc += d.acceptLen
				n++
			}
			if n < 30 {
				t.Fatalf("only %d usable decode lines of %d", n, len(lines))
			}
			mean := sum / float64(n)
			if math.Abs(mean-tc.want)/tc.want > 0.05 {
				t.Errorf("mean %.2f tok/s over %d lines, want %.2f ±5%%", mean, n, tc.want)
			}
			if tc.eagle {
				if a := acc / float64(n); a < 2.1 || a > 2.5 {
					t.Errorf("mean accept len %.2f, want ~2.3", a)
				}
			} else if acc != 0 {
				t.Error("accept len printed without speculative decoding")
			}
			distinct := map[float64]bool{}
			for _, d := range lines {
				distinct[d.tokS] = true
			}
			if len(distinct) < len(lines)/2 {
				t.Errorf("only %d distinct values in %d lines: no per-sample noise", len(distinct), len(lines))
			}
		})
	}
}

func TestServerSeedReproducible(t *testing.T) {
	first := func() []decodeLine {
		s := runInProc(t, "", profileEnv(), "--port", "0", "--time-scale", "50", "--startup-delay", "0.2", "--seed", "9")
		waitFor(t, 60*time.Second, "decode lines", func() bool { return strings.Count(s.out.String(), "Decode batch") >= 10 })
		s.stop()
		// The first line covers start-up, which runs on the wall clock.
		return decodeLines(t, s.out.String())[1:10]
	}
	a, b := first(), first()
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different throughput:\n%v\n%v", a, b)
	}
}

func TestServerStartupAndHealth(t *testing.T) {
	dir := simDir(t, simConfig{GPUs: 8})
	start := time.Now()
	s := runInProc(t, dir, nil, "--port", "0", "--startup-delay", "0.8", "--no-auto-load")
	// Port bound at the "Uvicorn running" line; the server is not ready yet.
	var codes []int
	readyAt := time.Time{}
	waitFor(t, 30*time.Second, "/health 200", func() bool {
		resp, err := http.Get(s.url("/health"))
		if err != nil {
			t.Fatalf("GET /health: %v", err)
		}
		resp.Body.Close()
		if len(codes) == 0 || codes[len(codes)-1] != resp.StatusCode {
			codes = append(codes, resp.StatusCode)
		}
		if resp.StatusCode == http.StatusOK {
			readyAt = time.Now()
			return true
		}
		return false
	})
	if !slices.Equal(codes, []int{503, 200}) {
		t.Errorf("/health went %v, want [503 200]", codes)
	}
	if d := readyAt.Sub(start); d < 800*time.Millisecond {
		t.Errorf("ready after %v, before the 0.8 s start-up delay", d)
	}
	log := s.out.String()
	order := []string{"server_args=ServerArgs(", "Init torch distributed ends. mem usage=", "Load weight begin. avail mem=",
		"Load weight end. type=", "KV Cache is allocated. #tokens: ", "Capture cuda graph begin. This can take up to several minutes. avail mem=",
		"Capture cuda graph end. Time elapsed: ", "Uvicorn running on http://" + s.addr + " (Press CTRL+C to quit)",
		"The server is fired up and ready to roll!"}
	last := -1
	for _, o := range order {
		i := strings.Index(log, o)
		if i < 0 || i < last {
			t.Fatalf("start-up line %q missing or out of order in:\n%s", o, log)
		}
		last = i
	}
	if !regexp.MustCompile(`(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP0\] Load weight begin\. avail mem=\d+\.\d\d GB$`).MatchString(log) {
		t.Error("Load weight line lacks the [date TP0] prefix")
	}
	if !regexp.MustCompile(`(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] The server is fired up and ready to roll!$`).MatchString(log) {
		t.Error("ready line lacks the [date] prefix")
	}
	// The GPU state file carries the loaded memory (~88 % of an H200).
	sv := readServerView(dir, time.Now())
	if !sv.Alive || sv.MemMiB < 125000 || sv.MemMiB > 128000 || sv.TP != 8 {
		t.Errorf("server view while ready: %+v", sv)
	}

	resp, err := http.Get(s.url("/health_generate"))
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/health_generate: %v %v", resp, err)
	}
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	resp, err = http.Get(s.url("/v1/models"))
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 1 || models.Data[0].ID != "/shared/kimi-k2.5-int4" {
		t.Errorf("/v1/models = %+v", models)
	}

	if code := s.stop(); code != 0 {
		t.Errorf("exit status %d after SIGTERM", code)
	}
	if log := s.out.String(); !strings.Contains(log, "INFO:     Shutting down") || !strings.HasSuffix(log, "Finished server process ["+strconv.Itoa(os.Getpid())+"]\n") {
		t.Errorf("shutdown lines missing:\n%s", log[max(0, len(log)-400):])
	}
	if sv := readServerView(dir, time.Now()); sv.Alive || sv.MemMiB != 0 {
		t.Errorf("server view after exit: %+v", sv)
	}
}

// sse reads an SSE body into its data payloads.
func sse(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		d, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", l)
		}
		out = append(out, d)
	}
	return out
}

func TestServerStreaming(t *testing.T) {
	s := runInProc(t, "", profileEnv(), "--port", "0", "--startup-delay", "0.1", "--time-scale", "20")
	waitFor(t, 30*time.Second, "ready", func() bool { return strings.Contains(s.out.String(), "ready to roll") })

	post := func(path, body string) *http.Response {
		resp, err := http.Post(s.url(path), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Text         *string         `json:"text"`
			Delta        map[string]any  `json:"delta"`
			FinishReason *string         `json:"finish_reason"`
			Message      *map[string]any `json:"message"`
		} `json:"choices"`
		Usage *usage `json:"usage"`
	}

	resp := post("/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":20,"stream":true,"stream_options":{"include_usage":true}}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("chat stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := sse(t, resp.Body)
	resp.Body.Close()
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", events[len(events)-1])
	}
	var chunks []chunk
	for _, e := range events[:len(events)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %q: %v", e, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object %q", c.Object)
		}
		chunks = append(chunks, c)
	}
	if d := chunks[0].Choices[0].Delta; d["role"] != "assistant" || d["content"] != nil {
		t.Errorf("first chunk delta %v, want role only", d)
	}
	tokens, words := 0, 0
	for _, c := range chunks[1 : len(chunks)-2] {
		words += len(strings.Fields(c.Choices[0].Delta["content"].(string)))
		tokens++
	}
	fin := chunks[len(chunks)-2]
	if fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "length" {
		t.Errorf("finish chunk %+v", fin)
	}
	u := chunks[len(chunks)-1]
	if len(u.Choices) != 0 || u.Usage == nil || u.Usage.CompletionTokens != 20 || u.Usage.TotalTokens != u.Usage.PromptTokens+20 || words != 20 {
		t.Errorf("usage chunk %+v after %d content chunks carrying %d tokens", u, tokens, words)
	}

	resp = post("/v1/completions", `{"prompt":"Once upon","max_tokens":5,"stream":true}`)
	events = sse(t, resp.Body)
	resp.Body.Close()
	if len(events) != 5+1+1 || events[6] != "[DONE]" || strings.Contains(events[5], `"usage":{`) {
		t.Errorf("completion stream without usage: %q", events)
	}

	resp = post("/v1/completions", `{"prompt":"Once upon","max_tokens":7}`)
	var full chunk
	json.NewDecoder(resp.Body).Decode(&full)
	resp.Body.Close()
	if full.Object != "text_completion" || full.Usage == nil || full.Usage.CompletionTokens != 7 || len(strings.Fields(*full.Choices[0].Text)) != 7 {
		t.Errorf("non-streaming completion %+v", full)
	}

	for body, want := range map[string]int{`{"prompt":"x","max_tokens":0}`: 400, `not json`: 400, `{"max_tokens":3}`: 400} {
		resp := post("/v1/completions", body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", body, resp.StatusCode, want)
		}
	}
	if !strings.Contains(s.out.String(), `"POST /v1/chat/completions HTTP/1.1" 200 OK`) {
		t.Error("no access log line for the chat request")
	}
}

// TestServerIdleGap checks SGLang's artefact: the first decode line after an
// idle pause covers the pause, so it reads near zero.
func TestServerIdleGap(t *testing.T) {
	s := runInProc(t, "", profileEnv(), "--port", "0", "--startup-delay", "0.1", "--time-scale", "100", "--no-auto-load")
	waitFor(t, 30*time.Second, "ready", func() bool { return strings.Contains(s.out.String(), "ready to roll") })
	gen := func() {
		resp, err := http.Post(s.url("/v1/completions"), "application/json", strings.NewReader(`{"prompt":"x","max_tokens":200}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	gen()
	before := len(decodeLines(t, s.out.String()))
	// Deliberate idle time, not a wait for an event: 150 ms wall = 15 s model.
	time.Sleep(150 * time.Millisecond)
	gen()
	lines := decodeLines(t, s.out.String())
	if len(lines) < before+4 {
		t.Fatalf("decode lines %d then %d", before, len(lines))
	}
	if first := lines[before].tokS; first > 89*0.2 {
		t.Errorf("first line after idle = %.2f tok/s, want near zero", first)
	}
	if next := lines[before+1].tokS; math.Abs(next-89)/89 > 0.05 {
		t.Errorf("second line after idle = %.2f tok/s, want ~89", next)
	}
	if !strings.Contains(s.out.String(), "Prefill batch. #new-seq: 1, #new-token: ") {
		t.Error("no prefill line for the new request")
	}
}

func TestServerPrefixes(t *testing.T) {
	s := runInProc(t, "", profileEnv(), "--port", "0", "--startup-delay", "0.1", "--time-scale", "50", "--log-prefix", "dp", "--dp-size", "2", "--seed", "3")
	waitFor(t, 60*time.Second, "decode lines", func() bool { return strings.Count(s.out.String(), "Decode batch") >= 20 })
	s.stop()
	lines := decodeLines(t, s.out.String())
	sums := map[int]float64{}
	for i, d := range lines[2:20] {
		want := "DP0 TP0"
		if i%2 == 1 {
			want = "DP1 TP1"
		}
		if d.rank != want {
			t.Fatalf("line %d rank %q, want %q", i+2, d.rank, want)
		}
		sums[i/2] += d.tokS
	}
	for k, sum := range sums {
		if math.Abs(sum-89)/89 > 0.05 {
			t.Errorf("DP ranks of step %d sum to %.2f, want ~89", k, sum)
		}
	}

	s = runInProc(t, "", nil, "--port", "0", "--startup-delay", "0.1", "--time-scale", "50", "--log-prefix", "none")
	waitFor(t, 60*time.Second, "decode line", func() bool { return strings.Contains(s.out.String(), "Decode batch") })
	s.stop()
	for _, l := range strings.Split(strings.TrimSpace(s.out.String()), "\n") {
		if !regexp.MustCompile(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] `).MatchString(l) {
			t.Fatalf("line with a rank tag under --log-prefix none: %q", l)
		}
	}
}

func TestServerReplay(t *testing.T) {
	raw, err := os.ReadFile("testdata/sglang-decode-eagle3-2025-10.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")[1:] // without "# source:"
	s := runInProc(t, "", nil, "--port", "0", "--replay-log", "testdata/sglang-decode-eagle3-2025-10.txt",
		"--time-scale", "100", "--startup-delay", "0.1")
	waitFor(t, 30*time.Second, "two passes", func() bool { return strings.Count(s.out.String(), "\n") >= 2*len(want) })
	resp, err := http.Get(s.url("/health"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.stop()
	got := strings.Split(s.out.String(), "\n")
	for i := 0; i < 2*len(want); i++ {
		if got[i] != want[i%len(want)] {
			t.Fatalf("replayed line %d = %q, want %q", i, got[i], want[i%len(want)])
		}
	}
	if strings.Contains(s.out.String(), "# source:") {
		t.Error("replay printed the fixture's source line")
	}
}

func TestParseServerArgs(t *testing.T) {
	cfg := simConfig{GPUs: 8, TimeScale: 1, StartupDelay: 2.5}
	o, err := parseServerArgs([]string{"--model-path", "/m", "--trust-remote-code", "--tp-size", "8", "--mem-fraction-static", "0.88",
		"--host", "0.0.0.0", "--port=8000", "--num-continuous-decode-steps", "4", "--disable-custom-all-reduce"}, cfg)
	if err != nil || o.port != 8000 || o.host != "0.0.0.0" || o.tp != 8 || !o.disableCustom || o.modelPath != "/m" || o.startupDelay != 2500*time.Millisecond {
		t.Errorf("the seeds' launch line: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"--port", "x"}, {"--tp-size", "0"}, {"--time-scale", "-1"}, {"--log-prefix", "xx"}, {"stray"}, {"--port"},
		{"--sim-fail", "segfault"}, {"--sim-fail", "oom=3"}, {"--sim-fail", "crash-after-ready=-1"}, {"--sim-workers", "9"},
		{"--sim-workers", "-1"}, {"--sim-fail", "oom", "--replay-log", "x.log"}} {
		if _, err := parseServerArgs(bad, cfg); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	for _, tc := range []struct {
		args       []string
		fail       string
		after      time.Duration
		workers    int
		stub, sess bool
	}{
		{[]string{"--sim-fail", "oom"}, "oom", 0, 0, false, false},
		{[]string{"--sim-fail=crash-after-ready"}, "crash-after-ready", 3 * time.Second, 0, false, false},
		{[]string{"--sim-fail", "crash-after-ready=0.5"}, "crash-after-ready", 500 * time.Millisecond, 0, false, false},
		{[]string{"--sim-stubborn-worker"}, "", 0, 1, true, false},
		{[]string{"--sim-workers", "3", "--sim-setsid-worker", "--sim-orphan-workers"}, "", 0, 3, false, true},
	} {
		o, err := parseServerArgs(tc.args, cfg)
		if err != nil || o.simFail != tc.fail || o.crashAfter != tc.after || o.workers != tc.workers || o.stubbornWorker != tc.stub || o.setsidWorker != tc.sess {
			t.Errorf("%v: %+v, %v", tc.args, o, err)
		}
	}
}

func FuzzParseServerArgs(f *testing.F) {
	f.Add("--model-path\x00/m\x00--tp-size\x008\x00--port=8000\x00--trust-remote-code")
	f.Add("--log-prefix\x00dp\x00--dp-size\x002\x00--time-scale\x001e9")
	f.Add("--sim-fail=crash-after-ready=2\x00--sim-workers\x002\x00--sim-stubborn-worker\x00--tp-size\x002")
	f.Fuzz(func(t *testing.T, joined string) {
		o, err := parseServerArgs(strings.Split(joined, "\x00"), simConfig{GPUs: 8, TimeScale: 1, StartupDelay: 2.5})
		if err != nil {
			return
		}
		if o.tp < 1 || o.dp < 1 || o.dp > o.tp || o.timeScale <= 0 || o.port < 0 || o.port > 65535 || o.replayEvery <= 0 ||
			o.workers < 0 || o.workers > o.tp || o.crashAfter < 0 {
			t.Fatalf("accepted invalid options %+v", o)
		}
	})
}
