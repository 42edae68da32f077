package gpus

import (
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestXidLineForms(t *testing.T) {
	for _, c := range []struct {
		x    event.Xid
		want string
		crit bool
	}{
		{event.Xid{Index: 3, BusID: "00000000:83:00.0", Code: 79}, "flightdeck: GPU 3 (00000000:83:00.0) Xid 79: GPU has fallen off the bus", true},
		{event.Xid{Index: 0, Code: 13}, "flightdeck: GPU 0 Xid 13: graphics engine exception (application fault, e.g. an illegal memory access)", false},
		{event.Xid{Index: -1, BusID: "00000000:83:00.0", Code: 119}, "flightdeck: GPU 00000000:83:00.0 Xid 119: GSP firmware RPC timeout", true},
		{event.Xid{Index: -1, Code: 1<<64 - 1}, "flightdeck: a GPU NVML did not name: Xid 18446744073709551615: unknown Xid, see NVIDIA's Xid catalog", false},
		{event.Xid{Index: 1, BusID: "0000:01:00.0\x1b[2J\r", Code: 94}, "flightdeck: GPU 1 (0000:01:00.0) Xid 94: contained ECC error (the affected application must restart)", true},
	} {
		got, crit := xidLine(c.x, 1, time.Time{})
		if got != c.want || crit != c.crit {
			t.Errorf("xidLine(%+v) = %q, %v; want %q, %v", c.x, got, crit, c.want, c.crit)
		}
	}
}
