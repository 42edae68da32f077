package jsonappend

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// wantString is what encoding/json writes for s with SetEscapeHTML(false).
func wantString(t testing.TB, s string) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func checkString(t testing.TB, s string) {
	t.Helper()
	want := wantString(t, s)
	if got := string(String(nil, s)); got != want {
		t.Fatalf("String(%q) = %s, want %s", s, got, want)
	}
	if got := string(String([]byte("x"), []byte(s))); got != "x"+want {
		t.Fatalf("String([]byte(%q)) = %s, want x%s", s, got, want)
	}
}

func TestString(t *testing.T) {
	for _, s := range []string{"", "TP0", "2025-10-22 10:27:57", "sglang", `a"b`, `a\b`, "tab\there", "é", "\xff",
		"\u2028", "\u2029", "x\x7f", "\x00\x01\x08\x0c\x1f", "\x1b[31mred\x1b[0m", "<a href=\"x\">&amp;</a>",
		"\xe2\x80", "\xe2\x80\xa8z", "ab\xc0\xafcd", "\xed\xa0\x80", "😀", "end\\", "\"", "日本語\n"} {
		checkString(t, s)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\x1b[2J\u2028é\xff<&>", "\xf0\x9f\x98"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkString(t, s) })
}

func checkFloat(t testing.TB, v float64) {
	t.Helper()
	var want string
	switch {
	case math.IsInf(v, 1):
		want = `"inf"`
	case math.IsInf(v, -1):
		want = `"-inf"`
	case math.IsNaN(v):
		want = `"nan"`
	default:
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want = string(j)
	}
	if got := string(Float(nil, v)); got != want {
		t.Fatalf("Float(%v) = %s, want %s", v, got, want)
	}
}

func TestFloat(t *testing.T) {
	for _, v := range []float64{0, math.Copysign(0, -1), 0.01, 0.1, 0.5, 1, 1.5, 9.99, 10, 100, 178.86, 2210.4, 0.959, 95.9 / 100,
		1e12, 1e13 - 0.01, 1e13, 123456789012.34, 99999999999.99, 5e-324, math.MaxFloat64, -1.25, 0.07, 1.95, 0.49,
		1e-6, 9.99e-7, 1e-7, 1e21, 1e21 - 65536, 1e15, 1e15 - 1, -1e15 + 1, 1 << 53, 1<<53 + 2, -273.15, 1e300, -1e-300,
		math.Inf(1), math.Inf(-1), math.NaN()} {
		checkFloat(t, v)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		n := r.Int64N(1e15)
		checkFloat(t, float64(n)/100)                                   // hundredths, the fast path
		checkFloat(t, float64(r.Int64N(1e6))/1000)                      // thousandths: mostly not
		checkFloat(t, -float64(n))                                      // negative integers
		checkFloat(t, r.Float64()*math.Pow(10, float64(r.IntN(60)-30))) // anything
	}
}

func FuzzFloat(f *testing.F) {
	for _, v := range []float64{178.86, 0.1, 1e13, 1e-7, 1e21, -0.0} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) { checkFloat(t, v) })
}

// The appenders allocate nothing beyond the slice they grow.
func TestNoAllocation(t *testing.T) {
	buf := make([]byte, 0, 256)
	line := []byte("\x1b[31mERROR\x1b[0m caf\xe9 \u2028 <x>")
	if n := testing.AllocsPerRun(100, func() {
		b := String(buf[:0], "TP0")
		b = String(b, line)
		b = Float(b, 178.86)
		b = Float(b, 1e-9)
		_ = Float(b, math.Inf(1))
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
