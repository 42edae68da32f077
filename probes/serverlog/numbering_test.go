package serverlog

import "testing"

// A guess lies between the first line not yet known and one line a byte
// after it, for any density, also where bytes times lines overflow an
// int64; the guess of a block whose predecessors are all counted is exact.
func TestNumberingGuessBounds(t *testing.T) {
	for _, tc := range []struct{ line, off, gap int }{
		{2, 1, 0}, {2, 1, 1 << 20}, {1e9, 1e11, 1e11}, {4e18, 5e18, 1e18}, {1, 0, 1 << 20}, {1 << 40, 1 << 41, 3},
	} {
		n := newNumbering(4)
		n.next, n.line, n.off = 1, tc.line, tc.off
		b := &block{seq: 2, off: tc.off + tc.gap}
		if g := n.guess(b); g < tc.line || g > tc.line+tc.gap {
			t.Errorf("line %d at %d, gap %d: guess %d outside [%d, %d]", tc.line, tc.off, tc.gap, g, tc.line, tc.line+tc.gap)
		}
		b.seq, b.off = 1, tc.off
		if g := n.guess(b); g != tc.line {
			t.Errorf("line %d at %d: the next block's guess %d, want %d", tc.line, tc.off, g, tc.line)
		}
	}
}

func TestDigits(t *testing.T) {
	for n, want := range map[int]int{1: 1, 9: 1, 10: 2, 99: 2, 100: 3, 999999: 6, 1000000: 7} {
		if got := digits(n); got != want {
			t.Errorf("digits(%d) = %d, want %d", n, got, want)
		}
	}
}
