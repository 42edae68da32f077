package tuitest

import "testing"

// TestGlyphRisk: ASCII, box drawing, the blocks and the arrow pass; the
// ambiguous, the wide, the emoji and the control characters do not.
func TestGlyphRisk(t *testing.T) {
	for _, r := range "az~ \n─│┌┐└┘├┤▁▂▃▄▅▆▇█↳" {
		if why := GlyphRisk(r); why != "" {
			t.Errorf("%q (U+%04X) refused: %s", r, r, why)
		}
	}
	for _, r := range "…°±×→≥≤•·–—✔❤☀⚠✅🚀漢\t\x1b" {
		if GlyphRisk(r) == "" {
			t.Errorf("%q (U+%04X) allowed", r, r)
		}
	}
}
