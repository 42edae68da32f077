package gpus

import (
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/tui/style"
)

func TestShortReason(t *testing.T) {
	for in, want := range map[string]string{
		"host is linux/arm64, this binary linux/amd64":                   "host is linux/arm64",
		"this build has no cgo":                                          "this build has no cgo",
		"NVML init failed: ERROR_LIBRARY_NOT_FOUND":                      "NVML init failed",
		"agent exited: exit status 1; stderr: GLIBC":                     "agent exited",
		"upload refused (scp: Permission denied)":                        "upload refused",
		"upload refused: exit status 20: mkdir: cannot create directory": "upload refused",
		"NVML init failed: ERROR_LIBRARY_NOT_FOUND (libnvidia-ml.so.1)":  "NVML init failed",
		"agent exited: signal: killed":                                   "agent exited",
		", starts with a comma":                                          ", starts with a comma",
		"":                                                               "",
		"no sample for 3 intervals (agent killed)":                       "no sample for 3 intervals",
		"checksum mismatch after upload, file replaced":                  "checksum mismatch after upload",
	} {
		if got := shortReason(in); got != want {
			t.Errorf("shortReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// wrapEven makes as few rows as wrapWords, none wider than the width,
// the words in order, and leaves no word alone on the last row when the
// rows above could take it.
func TestWrapEven(t *testing.T) {
	for _, c := range []struct {
		s    string
		w    int
		want []string
	}{
		{"simulated NVML, agent devel go1.26.8, NVML 13.590.48.01, driver 590.48.01 (uploaded)", 78,
			[]string{"simulated NVML, agent devel go1.26.8, NVML", "13.590.48.01, driver 590.48.01 (uploaded)"}},
		{"fits on one row", 80, []string{"fits on one row"}},
		{"", 10, []string{""}},
		{"a b c d e f g", 5, []string{"a b c", "d e f", "g"}},
		{"averyveryverylongword tail", 8, []string{"averyve", "ryveryl", "ongword", "tail"}},
	} {
		got := wrapEven(c.s, c.w)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrapEven(%q, %d) = %q, want %q", c.s, c.w, got, c.want)
		}
		if len(got) != len(style.Wrap(c.s, c.w)) {
			t.Errorf("wrapEven(%q, %d): %d rows, wrapWords %d", c.s, c.w, len(got), len(style.Wrap(c.s, c.w)))
		}
		for _, r := range got {
			if style.Width(r) > c.w {
				t.Errorf("wrapEven(%q, %d): row %q too wide", c.s, c.w, r)
			}
		}
		if strings.Join(strings.Fields(strings.Join(got, " ")), " ") != strings.Join(strings.Fields(c.s), " ") && !strings.Contains(c.s, "long") {
			t.Errorf("wrapEven(%q, %d) lost words: %q", c.s, c.w, got)
		}
	}
}
