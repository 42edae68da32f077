package journaltest

import (
	"os"
	"testing"
	"time"
)

// TestWriteDemoJournal writes FD_DEMO_JOURNAL (FD_DEMO_HOURS hours, 24
// when unset) for measuring by hand; skipped without it.
func TestWriteDemoJournal(t *testing.T) {
	path := os.Getenv("FD_DEMO_JOURNAL")
	if path == "" {
		t.Skip("FD_DEMO_JOURNAL not set")
	}
	hours := 24.0
	if h := os.Getenv("FD_DEMO_HOURS"); h != "" {
		d, err := time.ParseDuration(h + "h")
		if err != nil {
			t.Fatal(err)
		}
		hours = d.Hours()
	}
	os.Remove(path)
	n, err := DemoDay(path, time.Duration(hours*float64(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	t.Logf("%s: %d events, %d bytes", path, n, st.Size())
}
