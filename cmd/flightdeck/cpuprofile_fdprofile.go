//go:build fdprofile

// A profiling hook for measuring the cockpit's own CPU (docs/performance.md,
// "Rendering only when something changed"). It is not in the shipped
// binary: build with `go build -tags fdprofile`. Then
//
//	FLIGHTDECK_CPUPROFILE=/tmp/cockpit.pprof flightdeck connect ...
//
// writes a CPU profile of the span FLIGHTDECK_CPUPROFILE_SPAN (default 60s)
// that starts FLIGHTDECK_CPUPROFILE_DELAY (default 20s) after start-up,
// then the goroutines' stacks beside it (FILE.goroutines), while the
// program goes on running.

package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

func init() {
	path := os.Getenv("FLIGHTDECK_CPUPROFILE")
	if path == "" {
		return
	}
	delay := envDuration("FLIGHTDECK_CPUPROFILE_DELAY", 20*time.Second)
	span := envDuration("FLIGHTDECK_CPUPROFILE_SPAN", 60*time.Second)
	time.AfterFunc(delay, func() {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cpuprofile:", err)
			return
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "cpuprofile:", err)
			f.Close()
			return
		}
		time.AfterFunc(span, func() {
			pprof.StopCPUProfile()
			f.Close()
			if g, err := os.Create(path + ".goroutines"); err == nil {
				_ = pprof.Lookup("goroutine").WriteTo(g, 1)
				g.Close()
			}
		})
	})
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}
