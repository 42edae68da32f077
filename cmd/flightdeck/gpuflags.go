package main

import (
	"os"
	"runtime"
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
	if !testing.Testing() {
		lc.AgentBinary = selfBinary()
	}
	return nil
}

// selfBinary is the path of the running executable to upload as the
// agent: on Linux /proc/self/exe, which is the running image even when the
// file was rebuilt or deleted since (so the upload is the build whose
// version names it); elsewhere os.Executable's path; "" when neither can
// be read.
func selfBinary() string {
	if runtime.GOOS == "linux" {
		if f, err := os.Open("/proc/self/exe"); err == nil {
			f.Close()
			return "/proc/self/exe"
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

// check refuses a --sampler value ParseGPUMode does not take, before
// anything is dialled.
func (g *gpuFlags) check() error {
	_, err := sessions.ParseGPUMode(g.mode)
	return err
}
