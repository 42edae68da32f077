package main

import (
	"os"
	"testing"

	"github.com/spf13/pflag"

	"github.com/flightdeck-dev/flightdeck/sessions"
)

// gpuFlags choose how GPUs are sampled (connect, demo, server repeat).
type gpuFlags struct {
	mode string
	pcie bool
}

func (g *gpuFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&g.mode, "sampler", "auto", "how to sample GPUs: auto (NVML in-process on a local host, the uploaded flightdeck agent over SSH, else nvidia-smi), nvml, agent, nvidia-smi")
	fl.BoolVar(&g.pcie, "pcie", false, "with NVML or the agent, also sample PCIe rx/tx throughput (about 20 ms of driver time per GPU per read)")
}

// apply checks the flags and sets them in lc.
func (g *gpuFlags) apply(lc *sessions.LiveConfig) error {
	m, err := sessions.ParseGPUMode(g.mode)
	if err != nil {
		return err
	}
	lc.GPU, lc.GPUPCIe, lc.AgentVersion = m, g.pcie, versionString()
	// The agent is this executable, uploaded to the host, unless this is a
	// test binary: started there as "agent" it would run its tests.
	if exe, err := os.Executable(); err == nil && !testing.Testing() {
		lc.AgentBinary = exe
	}
	return nil
}

// check refuses a --sampler value ParseGPUMode does not take, before
// anything is dialled.
func (g *gpuFlags) check() error {
	_, err := sessions.ParseGPUMode(g.mode)
	return err
}
