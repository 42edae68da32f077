package hostwatch

import (
	"strings"
	"testing"
)

func TestLineRoundTrip(t *testing.T) {
	for _, l := range []Line{
		{T: TypeWatch, V: ProtocolVersion, Via: "agent", IntervalMS: 1000},
		{T: TypeGit, Why: "index,tree", Capped: true},
		{T: TypeServer, Why: "pidfile,root"},
		{T: TypeAlive}, {T: TypeError, Err: "no bash"}, {T: TypeLaunch, PID: 4242},
	} {
		b := AppendLine(nil, l)
		got, err := ParseLine(b[:len(b)-1])
		if err != nil || got != l {
			t.Errorf("%s: got %+v, %v", b, got, err)
		}
	}
	for _, bad := range []string{``, `{}`, `[1]`, `{"t":"watch","v":2}`, `{"t":1}`} {
		if _, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("ParseLine(%q): no error", bad)
		}
	}
	if _, err := ParseLine([]byte(`{"t":"watch","v":2}`)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("a newer version: %v", err)
	}
}

// FuzzParseLine: any input gives a line or an error, never a panic, and a
// line it accepts survives AppendLine.
func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"t":"git","why":"head"}`))
	f.Add([]byte(`{"t":"watch","v":1,"via":"shell","interval_ms":1000}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLine(b)
		if err != nil {
			return
		}
		out := AppendLine(nil, l)
		if again, err := ParseLine(out[:len(out)-1]); err != nil || again != l {
			t.Fatalf("%q → %+v → %q → %+v, %v", b, l, out, again, err)
		}
	})
}
