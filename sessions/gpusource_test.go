package sessions

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu/agent"
	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// execCounter is a Host that counts the commands it starts or runs.
type execCounter struct {
	remote.Host
	n atomic.Int64
}

func (h *execCounter) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	h.n.Add(1)
	return h.Host.Run(ctx, cmd, stdin)
}

func (h *execCounter) Start(ctx context.Context, cmd string) (remote.Process, error) {
	h.n.Add(1)
	return h.Host.Start(ctx, cmd)
}

// gpuEvents runs a GPU-only Live until stop says so (or 60 s), returning
// the Source events and the samples it published.
func gpuEvents(t *testing.T, cfg LiveConfig, stop func(samples int) bool) ([]event.GPUSource, []event.GPUSample, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu      sync.Mutex
		sources []event.GPUSource
		samples []event.GPUSample
	)
	err := RunLive(ctx, cfg, func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch d := e.Data.(type) {
		case event.GPUSource:
			sources = append(sources, d)
		case event.GPUSample:
			samples = append(samples, d)
			if stop(len(samples)) {
				cancel()
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("no end after 60 s: sources %+v, %d samples", sources, len(samples))
	}
	return sources, samples, err
}

// TestLocalSamplesNVMLWithoutProcesses: on a local host the GPUs are
// sampled in this process through NVML (here the simulated host's fake
// library): a event.GPUSource says nvml, samples carry all 8 GPUs, and not one
// command is run on the host, at start or per sample.
func TestLocalSamplesNVMLWithoutProcesses(t *testing.T) {
	h, err := sim.Start(context.Background(), sim.Options{NoSSH: true, GPUs: 8, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := agent.OpenSimNVML(h.Dir, nvml.Options{}); err != nil {
		var u *nvml.UnavailableError
		if errors.As(err, &u) && !nvml.Compiled() {
			t.Skip("no NVML in this build:", u.Reason)
		}
	}
	host := &execCounter{Host: remote.NewLocal()}
	defer host.Close()
	sources, samples, err := gpuEvents(t, LiveConfig{
		Host: host, GPULocal: true, Interval: 20 * time.Millisecond,
		OpenNVML: func(o nvml.Options) (*nvml.Sampler, error) { return agent.OpenSimNVML(h.Dir, o) },
	}, func(n int) bool { return n >= 10 })
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 1 || sources[0].Mode != event.SourceNVML || !strings.Contains(sources[0].Detail, "driver") {
		t.Errorf("sources %+v, want one nvml", sources)
	}
	if len(samples) < 10 || len(samples[9].GPUs) != 8 || samples[9].GPUs[7].Name.S != "NVIDIA H200" {
		t.Fatalf("%d samples, last %+v", len(samples), samples[len(samples)-1])
	}
	if n := host.n.Load(); n != 0 {
		t.Errorf("%d commands run on the host for %d NVML samples, want 0", n, len(samples))
	}
}

// TestLocalFallsBackToNvidiaSMI: when NVML cannot be opened the local host
// is sampled with nvidia-smi, and the event.GPUSource says why.
func TestLocalFallsBackToNvidiaSMI(t *testing.T) {
	h, err := sim.Start(context.Background(), sim.Options{NoSSH: true, GPUs: 2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	host := remote.NewLocal()
	defer host.Close()
	sources, samples, err := gpuEvents(t, LiveConfig{
		Host: host, Interval: 50 * time.Millisecond, GPUProgram: filepath.Join(h.BinDir, "nvidia-smi"),
		OpenNVML: func(nvml.Options) (*nvml.Sampler, error) {
			return nil, &nvml.UnavailableError{Reason: "NVML init failed: ERROR_LIBRARY_NOT_FOUND", Code: 12}
		},
	}, func(n int) bool { return n >= 2 })
	if err != nil {
		t.Fatal(err)
	}
	want := event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: "NVML init failed: ERROR_LIBRARY_NOT_FOUND"}
	if len(sources) != 1 || sources[0] != want {
		t.Errorf("sources %+v, want %+v", sources, want)
	}
	if len(samples) < 2 || len(samples[1].GPUs) != 2 {
		t.Errorf("samples %+v", samples)
	}
}

// TestGPUModeRefusals: --sampler nvml needs the local host, agent a
// remote one, and a local --sampler nvml that cannot open NVML fails
// rather than falling back; nvidia-smi is said as such.
func TestGPUModeRefusals(t *testing.T) {
	ssh := &execCounter{Host: remote.NewLocal()} // not a *remote.Local: "remote"
	defer ssh.Close()
	unavailable := func(nvml.Options) (*nvml.Sampler, error) {
		return nil, &nvml.UnavailableError{Reason: "no driver"}
	}
	for _, tc := range []struct {
		name string
		cfg  LiveConfig
		want string
	}{
		{"nvml over ssh", LiveConfig{Host: ssh, GPU: GPUNVML}, "only on the GPU host itself"},
		{"agent locally", LiveConfig{Host: ssh, GPULocal: true, GPU: GPUAgent}, "runs the agent over SSH"},
		{"nvml without NVML", LiveConfig{Host: ssh, GPULocal: true, GPU: GPUNVML, OpenNVML: unavailable}, "no driver"},
		{"bad mode", LiveConfig{Host: ssh, GPU: "cuda"}, `--sampler "cuda"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := RunLive(ctx, tc.cfg, func(event.Event) {})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
	for _, s := range []string{"", "auto", "nvml", "agent", "nvidia-smi"} {
		if _, err := ParseGPUMode(s); err != nil {
			t.Errorf("ParseGPUMode(%q): %v", s, err)
		}
	}
}
