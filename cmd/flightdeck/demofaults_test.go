package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// TestParseFaults: every --fault form, and the errors that name the bad one.
func TestParseFaults(t *testing.T) {
	fs, err := parseFaults([]string{"lost=1", "pcie=2", "thermal=3", "handle-lost=4", "stall", "xid=5:79", "xid=0:13"}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fs.LostGPUs, []int{1}) || !slices.Equal(fs.PCIeDegradedGPUs, []int{2}) || !slices.Equal(fs.ThermalGPUs, []int{3}) ||
		fs.HandleLostGPU == nil || *fs.HandleLostGPU != 4 || !fs.Stall ||
		!slices.Equal(fs.Xids, []sim.XidFault{{GPU: 5, Code: 79}, {GPU: 0, Code: 13}}) {
		t.Errorf("faults %+v", fs)
	}
	for _, tc := range []struct{ spec, want string }{
		{"xid=8:79", "GPU 8 does not exist"},
		{"xid=3", "want xid=GPU:CODE"},
		{"xid=3:0", "want xid=GPU:CODE"},
		{"xid=a:79", "want xid=GPU:CODE"},
		{"xid", "want xid=GPU:CODE"},
		{"lost", "xid=GPU:CODE or stall"},
		{"stall=1", "takes no GPU"},
		{"melt=1", `unknown fault "melt"`},
	} {
		if _, err := parseFaults([]string{tc.spec}, 8); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.spec, err, tc.want)
		}
	}
}
