package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/gpu/agent"
	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// GPUMode says how a Live samples the host's GPUs (LiveConfig.GPU).
type GPUMode string

const (
	// GPUAuto: NVML in this process on a local host, `flightdeck agent`
	// over SSH, each falling back to the nvidia-smi stream (saying why in
	// a event.GPUSource event).
	GPUAuto GPUMode = "auto"
	// GPUNVML: NVML in this process; only for a local host.
	GPUNVML GPUMode = "nvml"
	// GPUAgent: `flightdeck agent` on the host (over SSH).
	GPUAgent GPUMode = "agent"
	// GPUNvidiaSMI: one long-lived `nvidia-smi --query-gpu … -lms` stream.
	GPUNvidiaSMI GPUMode = "nvidia-smi"
)

// agentMinStale is the cockpit's floor on the agent's silence before it
// falls back to nvidia-smi (agent.Runner.MinStale): three 1 s intervals
// were too few on a loaded host, and each fallback costs a 30 s wait for
// the agent's return.
const agentMinStale = 10 * time.Second

// ParseGPUMode reads a --sampler flag's value: auto, nvml, agent or
// nvidia-smi ("" is auto).
func ParseGPUMode(s string) (GPUMode, error) {
	switch m := GPUMode(s); m {
	case "":
		return GPUAuto, nil
	case GPUAuto, GPUNVML, GPUAgent, GPUNvidiaSMI:
		return m, nil
	}
	return "", fmt.Errorf("--sampler %q: want auto, nvml, agent or nvidia-smi", s)
}

// isLocal reports whether GPUs on cfg's host are this machine's.
func (cfg *LiveConfig) isLocal() bool {
	if cfg.GPULocal {
		return true
	}
	_, ok := cfg.Host.(*remote.Local)
	return ok
}

// runGPU samples the host's GPUs the way cfg.GPU says, publishing a
// event.GPUSource first and again whenever the way changes.
func (l *Live) runGPU(ctx context.Context) error {
	cfg := &l.cfg
	mode, err := ParseGPUMode(string(cfg.GPU))
	if err != nil {
		return err
	}
	smi := &gpu.Sampler{Host: cfg.Host, Interval: cfg.Interval, Program: cfg.GPUProgram}
	source := func(s event.GPUSource) { l.Sink(event.Event{At: l.now(), Data: s}) }
	local := cfg.isLocal()
	switch {
	case mode == GPUNvidiaSMI:
		source(event.GPUSource{Mode: event.SourceNvidiaSMI})
		return smi.Run(ctx, l.Sink)
	case mode == GPUNVML && !local:
		return errors.New("--sampler nvml samples in this process, so only on the GPU host itself (connect local); over SSH use --sampler agent")
	case mode == GPUAgent && local:
		return errors.New("--sampler agent runs the agent over SSH; on the GPU host itself use --sampler nvml (connect local)")
	case local:
		open := cfg.OpenNVML
		if open == nil {
			open = nvml.Open
		}
		s, err := open(nvml.Options{Interval: cfg.Interval, PCIe: cfg.GPUPCIe, Now: cfg.Now})
		if err != nil {
			if mode == GPUNVML {
				return err
			}
			source(event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: fallbackReason(err)})
			return smi.Run(ctx, l.Sink)
		}
		defer s.Close()
		source(event.GPUSource{Mode: event.SourceNVML, Detail: nvmlDetail(s.Info())})
		return s.Run(ctx, l.Sink)
	default:
		return l.runAgent(ctx, smi)
	}
}

// fallbackReason is what the header says about a failed NVML open.
func fallbackReason(err error) string {
	var u *nvml.UnavailableError
	if errors.As(err, &u) {
		return u.Reason
	}
	return err.Error()
}

// nvmlDetail describes the library: "NVML 12.550.54.15, driver 550.54.15".
func nvmlDetail(in nvml.Info) string {
	switch {
	case in.NVML != "" && in.Driver != "":
		return "NVML " + in.NVML + ", driver " + in.Driver
	case in.Driver != "":
		return "driver " + in.Driver
	}
	return ""
}

// now is the time of Live's own events.
func (l *Live) now() time.Time {
	if l.cfg.Now != nil {
		return l.cfg.Now()
	}
	return time.Now()
}

// runAgent samples through `flightdeck agent` on the host (installed or
// uploaded by agent.Runner), falling back to smi with the reason. With
// required (--sampler agent) a fallback is still taken, since a cockpit
// without GPU samples helps nobody, and the header says why.
func (l *Live) runAgent(ctx context.Context, smi *gpu.Sampler) error {
	r, ok := l.agent.(*agent.Runner)
	if !ok {
		return errors.New("sessions: no agent runner for this host")
	}
	r.Fallback = smi
	return r.Run(ctx, l.Sink)
}

// newAgent returns the agent.Runner that runGPU will run (over SSH, unless
// --sampler nvidia-smi or nvml), which is also the host's remote.Agent for
// the watchers; otherwise a remote.Agent that has none, saying why.
func (l *Live) newAgent() remote.Agent {
	cfg := &l.cfg
	mode, err := ParseGPUMode(string(cfg.GPU))
	switch {
	case err != nil:
		return noAgent{err.Error()}
	case cfg.Host == nil:
		return noAgent{"no host"}
	case cfg.NoGPU:
		return noAgent{"no GPU sampling: the agent is not installed"} // nothing runs the Runner to settle it
	case cfg.isLocal():
		return noAgent{"the cockpit runs on the host itself"}
	case mode == GPUNvidiaSMI || mode == GPUNVML:
		return noAgent{"--sampler " + string(mode) + " runs no agent"}
	}
	return &agent.Runner{
		Host:     cfg.Host,
		Interval: cfg.Interval,
		PCIe:     cfg.GPUPCIe,
		Binary:   cfg.AgentBinary,
		Version:  cfg.AgentVersion,
		CacheDir: cfg.AgentCacheDir,
		MinStale: agentMinStale,
		Now:      cfg.Now,
	}
}

// noAgent is the remote.Agent of a Live that runs none.
type noAgent struct{ why string }

func (n noAgent) AgentCommand(context.Context, ...string) (string, error) {
	return "", fmt.Errorf("%w: %s", remote.ErrNoAgent, n.why)
}
