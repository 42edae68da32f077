package main

import (
	"strings"
	"testing"
)

// A pseudo-version names its commit: the revision is not repeated; a
// tag or a devel build gets it; "+dirty" is written once.
func TestFormatVersion(t *testing.T) {
	const rev = "3b2fc0c519e0a1b2c3d4e5f60718293a4b5c6d7e"
	for _, c := range []struct {
		mod, rev string
		dirty    bool
		want     string
	}{
		{"v0.0.0-20261130082657-3b2fc0c519e0", rev, false, "v0.0.0-20261130082657-3b2fc0c519e0 go1.26.8"},
		{"v0.0.0-20261130082657-3b2fc0c519e0+dirty", rev, true, "v0.0.0-20261130082657-3b2fc0c519e0+dirty go1.26.8"},
		{"v1.2.4-0.20261130082657-3b2fc0c519e0", rev, false, "v1.2.4-0.20261130082657-3b2fc0c519e0 go1.26.8"},
		{"v1.2.3", rev, false, "v1.2.3 3b2fc0c519e0 go1.26.8"},
		{"v1.2.3", rev, true, "v1.2.3 3b2fc0c519e0+dirty go1.26.8"},
		{"(devel)", rev, true, "devel 3b2fc0c519e0+dirty go1.26.8"},
		{"(devel)", "", false, "devel go1.26.8"},
		{"", "", true, "devel+dirty go1.26.8"},
		{"v1.2.3", "", false, "v1.2.3 go1.26.8"},
		// Another commit than the pseudo-version's (a replaced module
		// version): both are shown.
		{"v0.0.0-20261130082657-aaaaaaaaaaaa", rev, false, "v0.0.0-20261130082657-aaaaaaaaaaaa 3b2fc0c519e0 go1.26.8"},
	} {
		if got := formatVersion(c.mod, c.rev, c.dirty, "go1.26.8"); got != c.want {
			t.Errorf("formatVersion(%q, %q, %v) = %q, want %q", c.mod, c.rev, c.dirty, got, c.want)
		}
	}
}

// TestVersionFlag: --version prints what the version command prints.
func TestVersionFlag(t *testing.T) {
	flag, _, err := runCLI(t, nil, "--version")
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, err := runCLI(t, nil, "version")
	if err != nil || flag != cmd || !strings.HasPrefix(flag, "flightdeck ") {
		t.Errorf("--version %q, version %q (%v)", flag, cmd, err)
	}
}
