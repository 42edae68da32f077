package sim

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Versions are what the simulated host reports for the "sim" preset's
// version probes (`flightdeck sim version NAME`): plausible values for an
// H200 box (the driver is the one of the H200 capture).
var Versions = map[string]string{
	"driver": "590.48.01",
	"cuda":   "12.8",
	"nccl":   "2.27.3",
	"torch":  "2.8.0+cu128",
	"sglang": "0.5.4", // as python/sglang/version.py of the simulated checkout says
	"vllm":   "0.11.0",
	"python": "3.12.3",
}

// RunVersion is `flightdeck sim version NAME`: it prints the simulated
// version of NAME (a key of Versions) and returns 0, or explains on stderr
// and returns 1 for an unknown name and 2 for a wrong number of arguments.
func RunVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: flightdeck sim version NAME")
		return 2
	}
	v, ok := Versions[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "flightdeck sim version: no simulated version of %q (known: %s)\n", args[0], strings.Join(slices.Sorted(maps.Keys(Versions)), ", "))
		return 1
	}
	fmt.Fprintln(stdout, v)
	return 0
}
