package style

import (
	"context"
	"errors"
	"fmt"
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

func TestErrTextAndPadLeft(t *testing.T) {
	if got := ErrText(fmt.Errorf("dial: %w", context.Canceled)); got != "cancelled (the cockpit is quitting)" {
		t.Errorf("cancelled: %q", got)
	}
	if got := ErrText(errors.New("port 30000 in use\x1b[2J")); got != "port 30000 in use" {
		t.Errorf("sanitised: %q", got)
	}
	if got := PadLeft("42", 5); got != "   42" || PadLeft("12345", 3) != "12345" {
		t.Errorf("pad %q", got)
	}
}
