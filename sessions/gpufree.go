package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// GPUHolder is a process still holding GPU memory after a kill.
type GPUHolder struct {
	PID  int    // 0 when nvidia-smi cannot name it (containers)
	Name string // process_name, sanitised
	GPU  int    // GPU index, -1 when unknown
	MiB  float64
}

// GPUBusyError is returned by WaitGPUFree when the memory is not back in
// time. It names the server's processes still listed by nvidia-smi and the
// GPUs whose memory no listed process explains.
type GPUBusyError struct {
	After        time.Duration
	Holders      []GPUHolder
	Unattributed map[int]float64 // GPU index → MiB in use beyond the listed processes
}

func (e *GPUBusyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GPU memory still held after %v:", e.After.Round(time.Second))
	for _, h := range e.Holders {
		if h.PID > 0 {
			fmt.Fprintf(&b, " pid %d %s on GPU %d (%.0f MiB);", h.PID, h.Name, h.GPU, h.MiB)
		} else {
			fmt.Fprintf(&b, " an unnamed process on GPU %d (%.0f MiB);", h.GPU, h.MiB)
		}
	}
	gpus := make([]int, 0, len(e.Unattributed))
	for g := range e.Unattributed {
		gpus = append(gpus, g)
	}
	slices.Sort(gpus)
	for _, g := range gpus {
		fmt.Fprintf(&b, " GPU %d: %.0f MiB used by no listed process;", g, e.Unattributed[g])
	}
	return strings.TrimSuffix(b.String(), ";")
}

// FreeSlackMiB is how much memory a GPU may still show in use, beyond
// other users' listed processes, and count as free (the driver's and
// persistence daemon's share).
const FreeSlackMiB = 1024

// ErrNoGPUTool is returned by WaitGPUFree when the host has no nvidia-smi:
// nothing can be checked (a CPU-only host, or the simulated one without its
// tools on PATH).
var ErrNoGPUTool = errors.New("no nvidia-smi on the host: GPU memory not checked")

// WaitGPUFree polls nvidia-smi on h every second until no compute process
// among pids (the server's processes, snapshotted before the kill) is
// listed and every GPU's used memory is back within FreeSlackMiB of what
// other listed processes hold; a listed process whose pid nvidia-smi cannot
// give (containers) counts as possibly the server's. It gives up after
// timeout with a *GPUBusyError naming what still holds memory. progress,
// when not nil, is called with a one-line summary after each poll.
func WaitGPUFree(ctx context.Context, h remote.Host, program string, pids []int, timeout time.Duration, progress func(string)) error {
	start := time.Now()
	ours := map[int]bool{}
	for _, p := range pids {
		ours[p] = true
	}
	var last *GPUBusyError
	for {
		busy, err := gpuBusy(ctx, h, program, ours)
		var fe *gpu.FailureError
		if errors.As(err, &fe) && fe.Failure.Class == event.GPUFailNoNVIDIASMI {
			return ErrNoGPUTool
		}
		if err == nil && busy == nil {
			return nil
		}
		if busy != nil {
			last = busy
			if progress != nil {
				progress(busy.summary())
			}
		}
		elapsed := time.Since(start)
		if elapsed >= timeout {
			if last == nil {
				return fmt.Errorf("GPU memory not confirmed free after %v: %w", timeout, err)
			}
			last.After = elapsed
			return last
		}
		t := time.NewTimer(min(time.Second, timeout-elapsed))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (e *GPUBusyError) summary() string {
	var mib float64
	for _, h := range e.Holders {
		mib += h.MiB
	}
	for _, m := range e.Unattributed {
		mib += m
	}
	return fmt.Sprintf("waiting for GPU memory: %d processes, %.0f MiB", len(e.Holders), mib)
}

// gpuBusy returns nil when the memory is free, or what holds it.
func gpuBusy(ctx context.Context, h remote.Host, program string, ours map[int]bool) (*GPUBusyError, error) {
	apps, err := gpu.QueryComputeApps(ctx, h, program)
	if err != nil {
		return nil, err
	}
	mem, err := gpu.QueryGPUMemory(ctx, h, program)
	if err != nil {
		return nil, err
	}
	busy := &GPUBusyError{Unattributed: map[int]float64{}}
	others := map[int]float64{} // GPU → MiB of other users' processes
	index := func(bus string) int {
		for _, g := range mem {
			if gpu.SameBus(g.BusID, bus) {
				return g.Index
			}
		}
		return -1
	}
	for _, a := range apps {
		g := index(a.BusID.S)
		mib := 0.0
		if a.UsedMiB.Valid() {
			mib = a.UsedMiB.Value
		}
		if a.PID > 0 && !ours[a.PID] {
			others[g] += mib
			continue
		}
		if a.PID > 0 {
			busy.Holders = append(busy.Holders, GPUHolder{PID: a.PID, Name: a.Name.S, GPU: g, MiB: mib})
		}
	}
	for _, g := range mem {
		if !g.UsedMiB.Valid() {
			continue // a lost GPU cannot be waited for; the panel shows it
		}
		if extra := g.UsedMiB.Value - others[g.Index]; extra > FreeSlackMiB {
			busy.Unattributed[g.Index] = extra
		}
	}
	// Memory of our listed processes is explained by them.
	for _, hd := range busy.Holders {
		if m, ok := busy.Unattributed[hd.GPU]; ok {
			if m -= hd.MiB; m > FreeSlackMiB {
				busy.Unattributed[hd.GPU] = m
			} else {
				delete(busy.Unattributed, hd.GPU)
			}
		}
	}
	if len(busy.Holders) == 0 && len(busy.Unattributed) == 0 {
		return nil, nil
	}
	return busy, nil
}
