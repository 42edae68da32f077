package tui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/screen"
)

// recv waits for the bridge's next message, failing after a deadline.
func recv(t *testing.T, out <-chan tea.Msg) tea.Msg {
	t.Helper()
	select {
	case m := <-out:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("bridge sent nothing")
		return nil
	}
}

func startPump(t *testing.T, b Bridge) (out chan tea.Msg, stop func()) {
	t.Helper()
	out = make(chan tea.Msg, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.pump(ctx, func(m tea.Msg) { out <- m })
	}()
	return out, func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("bridge did not stop when its context ended")
		}
	}
}

func rateEv(v float64) event.Event { return ev(0, event.TokRate{TokPerSec: v, Ranks: 1}) }

func TestBridgeBatchesByTime(t *testing.T) {
	events := make(chan event.Event)
	out, stop := startPump(t, Bridge{Events: events, FlushEvery: 20 * time.Millisecond})
	defer stop()
	for i := range 10 {
		events <- rateEv(float64(i))
	}
	got := recv(t, out).(EventsMsg)
	// The timer starts at the first event, so a slow producer may split the
	// ten across batches; none is lost, order is kept.
	n := len(got)
	for n < 10 {
		got = append(got, recv(t, out).(EventsMsg)...)
		n = len(got)
	}
	for i, e := range got {
		if e.Data.(event.TokRate).TokPerSec != float64(i) {
			t.Fatalf("event %d out of order: %+v", i, e)
		}
	}
}

func TestBridgeBatchesBySize(t *testing.T) {
	events := make(chan event.Event)
	out, stop := startPump(t, Bridge{Events: events, FlushEvery: time.Hour, MaxBatch: 4})
	defer stop()
	for i := range 9 {
		events <- rateEv(float64(i))
	}
	for _, want := range []int{4, 4} {
		if got := recv(t, out).(EventsMsg); len(got) != want {
			t.Fatalf("batch of %d, want %d", len(got), want)
		}
	}
	close(events) // closing flushes the rest
	if got := recv(t, out).(EventsMsg); len(got) != 1 || got[0].Data.(event.TokRate).TokPerSec != 8 {
		t.Fatalf("last batch %+v", got)
	}
}

func TestBridgeKeepsOrderWithMessages(t *testing.T) {
	events := make(chan event.Event)
	msgs := make(chan tea.Msg)
	out, stop := startPump(t, Bridge{Events: events, Msgs: msgs, FlushEvery: time.Hour})
	defer stop()
	events <- rateEv(1)
	events <- rateEv(2)
	msgs <- HeadMsg{Head: "abc"}
	events <- rateEv(3)
	close(events)
	if got := recv(t, out).(EventsMsg); len(got) != 2 {
		t.Fatalf("first %+v", got)
	}
	if got := recv(t, out); got != (HeadMsg{Head: "abc"}) {
		t.Fatalf("second %+v", got)
	}
	if got := recv(t, out).(EventsMsg); len(got) != 1 {
		t.Fatalf("third %+v", got)
	}
}

func TestBridgeStopsWhenContextEnds(t *testing.T) {
	events := make(chan event.Event)
	_, stop := startPump(t, Bridge{Events: events})
	stop() // fails the test if the goroutine does not return
}

// discardScreen draws a test program's frames nowhere, at 80x24.
var discardScreen = screen.Target{Out: io.Discard, Width: 80, Height: 24}

func runOpts() []tea.ProgramOption {
	return []tea.ProgramOption{
		tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithWindowSize(80, 24),
		tea.WithoutSignalHandler(), tea.WithColorProfile(colorprofile.Ascii),
	}
}

func TestRunDeliversEventsAndQuits(t *testing.T) {
	events := make(chan event.Event)
	msgs := make(chan tea.Msg, 1)
	m := New(Options{Theme: ThemeDark})
	msgs <- HeadMsg{Head: "bba2fc4"}
	go func() {
		// q arrives after the events (the bridge has taken both from the
		// unbuffered channel): it is sent after they are flushed. With
		// buffered events the bridge could pick q first.
		events <- ev(0, h200s(8))
		events <- rateEv(82.4)
		close(events)
		msgs <- tea.KeyPressMsg{Code: 'q', Text: "q"}
		close(msgs)
	}()
	err := Bridge{Events: events, Msgs: msgs, Screen: discardScreen}.Run(context.Background(), m, runOpts()...)
	if err != nil {
		t.Fatalf("Run after q: %v", err)
	}
	if !m.Quitting() || m.gpus.Len() != 8 || m.head != "bba2fc4" {
		t.Errorf("model after Run: quitting %v, %d GPUs, head %q", m.Quitting(), m.gpus.Len(), m.head)
	}
}

func TestRunEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Bridge{Events: make(chan event.Event), Screen: discardScreen}.Run(ctx, New(Options{}), runOpts()...)
	}()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestTeatestSmoke runs the real program loop: the screen shows the data,
// then q quits.
func TestTeatestSmoke(t *testing.T) {
	tm := teatest.NewTestModel(t, New(Options{Host: "gpu-box", Theme: ThemeDark}),
		teatest.WithInitialTermSize(80, 24),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	tm.Send(EventsMsg{connected(), ev(0, h200s(8)), rateEv(82.4), ev(0, decodeLines(0, 30))})
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("H200")) && bytes.Contains(b, []byte("82.4")) &&
			bytes.Contains(b, []byte("#token: 1229"))
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if !fm.Quitting() {
		t.Error("final model did not quit")
	}
}
