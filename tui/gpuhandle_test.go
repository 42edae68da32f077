package tui

import (
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// handleLost is a sample of n H200s read through NVML in which the GPUs
// of lost are Missing: NVML gives no handle for them.
func handleLost(n int, lost ...int) event.GPUSample {
	s := h200s(n)
	kept := s.GPUs[:0]
	for _, g := range s.GPUs {
		if !containsInt(lost, g.Index) {
			kept = append(kept, g)
		}
	}
	s.GPUs, s.Missing = kept, lost
	return s
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// handleLostScene is the standard screen sampled by the agent, on a host
// of n GPUs where NVML never gave a handle for GPU 2, and GPU 5's handle
// failed after a first sample read it (the agent restarted): both keep
// their rows, GPU 5 with the name and bus id read before.
func handleLostScene(w, h, n int) *Model {
	m := scene(w, h, 0, 100, Options{})
	send(m, ev(4*time.Second, srcAgent), ev(5*time.Second, handleLost(n, 2)), ev(6*time.Second, handleLost(n, 2, 5)))
	return m
}

// Golden screens of GPUs whose handle fails, at 80 and 120 columns.
// Regenerate with go test -update.
func TestHandleLostGolden(t *testing.T) {
	t.Run("80x24", func(t *testing.T) { golden.RequireEqual(t, plain(handleLostScene(80, 24, 8))) })
	t.Run("120x30", func(t *testing.T) { golden.RequireEqual(t, plain(handleLostScene(120, 30, 8))) })
}

// A GPU whose handle fails keeps its row, in index order: LOST, "handle
// lost", its index (critical), and the name and bus id an earlier sample
// read; it is abnormal, and the table counts it.
func TestHandleLostKeepsTheRow(t *testing.T) {
	m := handleLostScene(120, 30, 8)
	var idx []string
	for _, l := range screenLines(m)[1:] {
		if f := strings.Fields(l); len(f) > 1 && f[0] != "GPU" && len(f[0]) == 1 && f[0][0] >= '0' && f[0][0] <= '9' {
			idx = append(idx, f[0])
		}
	}
	if got := strings.Join(idx, " "); got != "0 1 2 3 4 5 6 7" {
		t.Errorf("rows %q, want 0-7:\n%s", got, plain(m))
	}
	if row := rowOf(t, m, "2"); !strings.Contains(row, "?") || !strings.Contains(row, "LOST  handle lost: NVML gives no handle for this GPU") ||
		strings.Contains(row, "bus") {
		t.Errorf("GPU 2 (never read) row %q", row)
	}
	if row := rowOf(t, m, "5"); !strings.Contains(row, "H200") ||
		!strings.Contains(row, "LOST  handle lost: NVML gives no handle for this GPU (bus 00000000:68:00.0)") {
		t.Errorf("GPU 5 row %q", row)
	}
	st := m.Styles()
	if !painted(m, st.Crit, "2") || !painted(m, st.Crit, "LOST  handle lost: NVML gives no handle for this GPU") {
		t.Error("GPU 2's index or message not critical")
	}
	if m.gpus.Len() != 8 {
		t.Errorf("table counts %d GPUs, want 8", m.gpus.Len())
	}
	// The handle comes back: the row is a GPU's again.
	send(m, ev(7*time.Second, h200s(8)))
	if row := rowOf(t, m, "2"); strings.Contains(row, "LOST") || !strings.Contains(row, "H200") {
		t.Errorf("GPU 2 back: %q", row)
	}
	// Through nvidia-smi, Missing is a row that did not come.
	send(m, ev(8*time.Second, srcAsked), ev(9*time.Second, handleLost(8, 5)))
	if row := rowOf(t, m, "5"); !strings.Contains(row, "LOST  missing from the latest sample (bus 00000000:68:00.0)") {
		t.Errorf("GPU 5 missing from nvidia-smi: %q", row)
	}
}

// On a 16-GPU host with GPU 2's handle lost (`demo --gpus 16 --fault
// handle-lost=2`), the scrolling table says 16, and the experiment's
// GPUs (as the Lab records them, event.GPUSample.WithMissing) read
// "16x NVIDIA H200, GPU 2 lost" in the x panel, not 15x.
func TestHandleLostCounted(t *testing.T) {
	m := handleLostScene(120, 24, 16)
	if head := screenLines(m)[1]; !strings.Contains(head, " of 16") {
		t.Errorf("table header %q, want it to count 16", head)
	}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 50})
	s := handleLost(16, 2)
	first := h200s(16)
	send(m, ev(7*time.Second, event.ExperimentStart{ID: "e1", Name: "none @ bba2fc4", Trigger: event.TriggerLaunch}),
		ev(8*time.Second, event.ExperimentFingerprint{Exp: "e1", Fingerprint: event.Fingerprint{At: at(8 * time.Second), GPUs: s.WithMissing(first.GPUs)}}))
	press(m, "x")
	if scr := plain(m); !strings.Contains(scr, "gpus        16x NVIDIA H200, GPU 2 lost  SM 1980 MHz") {
		t.Errorf("x panel does not count GPU 2:\n%s", scr)
	}
}

// Through nvidia-smi a GPU whose handle fails takes the whole command
// down: it prints only "Unable to determine the device handle for GPU
// <bus>: …" (the real line, from the fixture) and no rows, so there is no
// sample to list it in Missing. The row of that bus stays, LOST with the
// failure's words; the others keep their last values; the table still
// counts every GPU.
func TestNvidiaSMIHandleFailureKeepsTheRow(t *testing.T) {
	raw, err := os.ReadFile("testdata/nvidia-smi-failure-gpu-lost.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := newSized(120, 24, Options{})
	s := h200s(4)
	s.GPUs[1].BusID = txt("00000000:01:00.0")
	send(m, ev(0, srcAsked), ev(time.Second, s))
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if f, ok := gpu.ClassifyFailure([]byte(line)); ok {
			send(m, ev(2*time.Second, f))
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d failure lines in the fixture, want 1", n)
	}
	if row := rowOf(t, m, "1"); !strings.Contains(row, "LOST  gpu-lost: GPU is lost") {
		t.Errorf("GPU 1 row %q", row)
	}
	if m.gpus.Len() != 4 {
		t.Errorf("table counts %d GPUs, want 4", m.gpus.Len())
	}
}
