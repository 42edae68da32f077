// Package gpu samples NVIDIA GPUs through nvidia-smi and parses its output:
// the --query-gpu CSV (driver ≥ 450; with or without header and units), the
// --help-query-gpu field list, and the one-line whole-command failures
// ("Unable to determine the device handle …", "No devices were found", …).
//
// A value nvidia-smi could not give ("[N/A]", "[Not Supported]", "ERR!", …)
// is kept as a distinct event.CellStatus, never as 0.
package gpu
