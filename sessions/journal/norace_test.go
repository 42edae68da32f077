//go:build !race

package journal

// RaceEnabled: see race_test.go.
const RaceEnabled = false
