package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoServerCodeInTmux is the third part of the seventeenth issue at
// 80x24, on the real binary: a git pull outside the cockpit while the
// server runs the good commit; the header says so (server a6d51c0 != HEAD
// e7b9c70) from the HEAD-moved banner on, and after esc dismisses the
// banner; a relaunch (L) runs HEAD and the header is plain HEAD again.
// Then z cycles the tok/s line's axis and its scale follows.
func TestDemoServerCodeInTmux(t *testing.T) {
	bin := flightdeckBinary(t)
	dir := filepath.Join(t.TempDir(), "D")
	s := startTmux(t, 80, 24, bin+" demo --dir "+dir)
	header := func(screen string) string { l, _, _ := strings.Cut(screen, "\n"); return l }
	repo := filepath.Join(dir, "repo")
	short := func() string {
		out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").CombinedOutput()
		if err != nil {
			t.Fatalf("git rev-parse: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	s.waitScreen(40*time.Second, func(screen string) string {
		if !strings.Contains(header(screen), " ready ") {
			return "server not ready"
		}
		return ""
	})
	good := short()
	s.waitScreen(10*time.Second, has("HEAD "+good))

	out, err := exec.Command("git", "-C", repo, "pull", "-q", "--ff-only").CombinedOutput()
	if err != nil {
		t.Fatalf("git pull: %v\n%s", err, out)
	}
	pulled := short()
	mismatch := "server " + good + " != HEAD " + pulled
	screen := s.waitScreen(15*time.Second, func(screen string) string {
		if !strings.Contains(screen, "HEAD moved "+good+" -> "+pulled) {
			return "no HEAD-moved banner"
		}
		if !strings.Contains(header(screen), mismatch) {
			return "header lacks " + mismatch
		}
		return ""
	})
	if w := len([]rune(header(screen))); w > 80 {
		t.Errorf("header %d wide: %q", w, header(screen))
	}
	s.keys("Escape")
	s.waitScreen(5*time.Second, func(screen string) string {
		if strings.Contains(screen, "HEAD moved") {
			return "banner not dismissed"
		}
		if !strings.Contains(header(screen), mismatch) {
			return "header lacks " + mismatch + " after esc"
		}
		return ""
	})

	// L: relaunch; the server now runs HEAD.
	s.keys("L")
	s.waitScreen(10*time.Second, has("enter launch"))
	s.keys("Enter")
	s.waitScreen(10*time.Second, has("y/N"))
	s.keys("y")
	s.waitScreen(60*time.Second, func(screen string) string {
		h := header(screen)
		if strings.Contains(h, "server "+good) {
			return "header still says the old server's code"
		}
		if !strings.Contains(h, "HEAD "+pulled) || !strings.Contains(h, " ready ") {
			return "header lacks the relaunched server at HEAD " + pulled
		}
		return ""
	})

	// z: the axis cycles (around the run's median, auto, from zero); the
	// scale on the tok/s row follows.
	axis := regexp.MustCompile(`(?m)^tok/s .*  axis ([0-9.]+)-([0-9.]+)`)
	scale := func(screen string) string {
		if m := axis.FindStringSubmatch(screen); m != nil {
			return m[1] + "-" + m[2]
		}
		return ""
	}
	before := scale(s.waitScreen(30*time.Second, func(screen string) string {
		if scale(screen) == "" {
			return "no axis on the tok/s row"
		}
		return ""
	}))
	s.keys("z")
	s.waitScreen(5*time.Second, func(screen string) string {
		if a := scale(screen); a == "" || a == before {
			return "the axis did not change from " + before
		}
		return ""
	})
	s.keys("z")
	s.waitScreen(5*time.Second, func(screen string) string {
		if !strings.HasPrefix(scale(screen), "0-") {
			return "the axis is not from zero: " + scale(screen)
		}
		return ""
	})
	s.quit()
}
