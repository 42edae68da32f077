package gpu

import (
	"strings"
	"testing"
)

func TestXidMeaning(t *testing.T) {
	for _, c := range []struct {
		code     uint64
		critical bool
		contains string
	}{
		{48, true, "double-bit ECC"},
		{63, true, "row remapping"},
		{64, true, "row remapping failed"},
		{74, true, "NVLink"},
		{79, true, "fallen off the bus"},
		{92, true, "single-bit ECC"},
		{94, true, "contained ECC"},
		{95, true, "uncontained ECC"},
		{119, true, "GSP"},
		{120, true, "GSP"},
		{13, false, "application fault"},
		{31, false, "page fault"},
		{43, false, "stopped processing"},
		{0, false, "unknown Xid"},
		{9999, false, "unknown Xid"},
		{1<<64 - 1, false, "unknown Xid"},
	} {
		text, crit := XidMeaning(c.code)
		if crit != c.critical || !strings.Contains(text, c.contains) {
			t.Errorf("XidMeaning(%d) = %q, %v; want %v and a text with %q", c.code, text, crit, c.critical, c.contains)
		}
	}
	// Every text is plain printable ASCII: it is drawn in the log panel.
	for code, m := range xidMeanings {
		for _, r := range m.text {
			if r < 0x20 || r > 0x7e {
				t.Errorf("Xid %d: %q has %q", code, m.text, r)
			}
		}
	}
}
