package style

import (
	"testing"
	"time"
)

func TestAgeAndBaseNames(t *testing.T) {
	now := time.Date(2025, 10, 22, 10, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{40 * time.Second: "40s", 3*time.Minute + 59*time.Second: "3m", 2 * time.Hour: "2h", 5 * 24 * time.Hour: "5d", -time.Second: ""} {
		if got := Age(now, now.Add(-d)); got != want {
			t.Errorf("Age %v: %q, want %q", d, got, want)
		}
	}
	if Age(time.Time{}, now) != "" {
		t.Error("Age of an unknown now")
	}
	if got := BaseNames([]string{"a/x.py", "b/y.py", "z.py"}, 57, 2); got != "x.py, y.py +55 more" {
		t.Errorf("BaseNames %q", got)
	}
	if got := BaseNames([]string{"a/x.py"}, 0, 3); got != "x.py" {
		t.Errorf("BaseNames %q", got)
	}
}
