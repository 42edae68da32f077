package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func lines(offset int64, texts ...string) event.LogLines {
	var ls event.LogLines
	for _, s := range texts {
		ls.Lines = append(ls.Lines, event.LogLine{Offset: offset, Text: []byte(s)})
		offset += int64(len(s)) + 1
	}
	return ls
}

// TestLogPipelineParsesInOrder: raw lines pass through first, then what was
// parsed from them, then the aggregate tok/s points; a Reset starts over.
func TestLogPipelineParsesInOrder(t *testing.T) {
	var got []event.Event
	p := &LogPipeline{Server: serverlog.ServerSGLang, Sink: func(e event.Event) { got = append(got, e) }}
	at := time.Unix(1000, 0)
	decode := func(sec int, tok string) string {
		return "[2025-10-22 10:27:" + string(rune('0'+sec/10)) + string(rune('0'+sec%10)) +
			" TP0] Decode batch. #running-req: 1, #token: 900, token usage: 0.01, cuda graph: True, gen throughput (token/s): " + tok + ", #queue-req: 0, "
	}
	p.Publish(event.Event{At: at, Data: lines(0,
		decode(10, "88.50"), decode(11, "89.25"), decode(12, "89.75"),
		"[2025-10-22 10:27:13] The server is fired up and ready to roll!",
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 616.00 MiB.",
	)})

	if _, ok := got[0].Data.(event.LogLines); !ok {
		t.Fatalf("first event %T, want the raw lines", got[0].Data)
	}
	var tput, rates []float64
	var ready, oom bool
	for _, e := range got[1:] {
		if !e.At.Equal(at) {
			t.Errorf("%T stamped %v, want the lines' time", e.Data, e.At)
		}
		switch d := e.Data.(type) {
		case event.Throughput:
			tput = append(tput, d.TokPerSec)
		case event.TokRate:
			if !d.Dropped {
				rates = append(rates, d.TokPerSec)
			}
		case event.ServerReady:
			ready = true
		case event.ServerFailure:
			oom = oom || d.Class == event.FailOOM
		}
	}
	if len(tput) != 3 || tput[0] != 88.5 || tput[2] != 89.75 {
		t.Errorf("throughput %v", tput)
	}
	if len(rates) < 2 || rates[len(rates)-1] != 89.75 && rates[len(rates)-1] != 89.25 {
		t.Errorf("rates %v", rates)
	}
	if !ready || !oom {
		t.Errorf("ready %v oom %v", ready, oom)
	}

	// After a reset the next lines are a new run: nothing spills over.
	got = nil
	p.Publish(event.Event{At: at, Data: event.LogReset{Reason: "truncated"}})
	p.Publish(event.Event{At: at, Data: lines(0, decode(20, "62.50"))})
	if len(got) < 2 {
		t.Fatalf("events after reset: %d", len(got))
	}
	if _, ok := got[0].Data.(event.LogReset); !ok {
		t.Fatalf("reset not passed on: %T", got[0].Data)
	}
}

// TestRunLiveStartsNearTheEndOfABigLog: a long-running server's log is not
// replayed over SSH; reading starts at a line boundary within the backlog.
func TestRunLiveStartsNearTheEndOfABigLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	line := strings.Repeat("x", 99) + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 1000)), 0o644); err != nil { // 100,000 bytes
		t.Fatal(err)
	}
	host := remote.NewLocal()
	defer host.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := make(chan event.LogLines, 1)
	go RunLive(ctx, LiveConfig{Host: host, LogPath: path, LogBacklog: 1050, GPUProgram: "true"}, func(e event.Event) {
		if l, ok := e.Data.(event.LogLines); ok {
			select {
			case first <- l:
			default:
			}
		}
	})
	select {
	case l := <-first:
		// The first line starting in the last 1050 bytes is at 99,000.
		if l.Lines[0].Offset != 99000 || len(l.Lines) != 10 {
			t.Fatalf("first batch starts at %d with %d lines, want 99000 and 10", l.Lines[0].Offset, len(l.Lines))
		}
	case <-ctx.Done():
		t.Fatal("no log lines")
	}
}
