package replay

import (
	"errors"
	"testing"
	"time"
)

func TestParseClock(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0}, {"42", 42 * time.Second}, {"90.5", 90*time.Second + 500*time.Millisecond}, {" 3723 ", 3723 * time.Second},
		{"1:05", 65 * time.Second}, {"75:00", 75 * time.Minute}, {"1:02:03", time.Hour + 2*time.Minute + 3*time.Second},
		{"0:00:59.25", 59*time.Second + 250*time.Millisecond}, {"12:00:00", 12 * time.Hour}, {"00:07", 7 * time.Second},
		{"1h2m", time.Hour + 2*time.Minute}, {"90s", 90 * time.Second}, {" 1m30.5s ", 90*time.Second + 500*time.Millisecond},
	} {
		got, err := ParseClock(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseClock(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", " ", "abc", "-5", "1:60", "1:-1", "1:2:3:4", ":30", "1:", "1::3", "1:60:00", "1e3", "0x10", "+5",
		"NaN", "Inf", "1:02:03.5.1", "99999999999", "1_000", "1:0x:00", "-1m", "5ms5", "1h:00", "200000h", "s"} {
		if d, err := ParseClock(in); !errors.Is(err, errClock) {
			t.Errorf("ParseClock(%q) = %v, %v; want errClock", in, d, err)
		}
	}
}

func TestFmtClock(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0:00:00", -time.Second: "0:00:00", 59*time.Second + 999*time.Millisecond: "0:00:59",
		time.Hour + 2*time.Minute + 3*time.Second: "1:02:03", 125 * time.Hour: "125:00:00"} {
		if got := fmtClock(d); got != want {
			t.Errorf("fmtClock(%v) = %q, want %q", d, got, want)
		}
	}
}

// FuzzParseClock: any text parses to a time in [0, maxClock] or errClock,
// never a panic, and a formatted time parses back.
func FuzzParseClock(f *testing.F) {
	for _, s := range []string{"1:02:03", "90.5", "75:00", "", "1:60", "-1", "1e308", "0:00:00.000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseClock(s)
		if err != nil {
			if !errors.Is(err, errClock) {
				t.Fatalf("ParseClock(%q): %v is not errClock", s, err)
			}
			return
		}
		if d < 0 || d > maxClock {
			t.Fatalf("ParseClock(%q) = %v out of range", s, d)
		}
		whole := d / time.Second * time.Second
		if back, err := ParseClock(fmtClock(whole)); err != nil || back != whole {
			t.Fatalf("round trip of %v: %q -> %v, %v", whole, fmtClock(whole), back, err)
		}
	})
}
