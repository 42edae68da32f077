package sanitize

import (
	"slices"
	"testing"
)

func TestLines(t *testing.T) {
	raw := "\n\n  error: a\x1b[2J\r\n\tREADME.md\n\nlast"
	if got, want := Lines(raw, 0), []string{"error: a", "README.md", "last"}; !slices.Equal(got, want) {
		t.Errorf("Lines %q, want %q", got, want)
	}
	if got := Lines(raw, 2); len(got) != 2 {
		t.Errorf("Lines(2) %q", got)
	}
	if FirstLine(raw) != "error: a" || FirstLine(" \n ") != "" {
		t.Errorf("FirstLine %q", FirstLine(raw))
	}
	if All(nil) != nil || !slices.Equal(All([]string{"a\x07"}), []string{`a\x07`}) {
		t.Errorf("All %q", All([]string{"a\x07"}))
	}
}
