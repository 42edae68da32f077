//go:build linux && cgo

package nvml

// compiled: Linux with cgo, so go-nvml is linked in.
const compiled = true
