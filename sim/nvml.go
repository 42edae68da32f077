package sim

// EnvNVML names the environment variable the simulated host's SSH server
// sets for its sessions: the sim directory whose GPU model a `flightdeck
// agent` started there samples through a fake NVML (OpenNVML) instead of
// libnvidia-ml.so.1. Only the simulated host sets it.
const EnvNVML = "FLIGHTDECK_SIM_NVML"
