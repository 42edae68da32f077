package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestFollowersSeeTheDriversNoteInTmux: a cockpit connected over SSH to a
// simulated host drives it and mirrors its journal there. Two followers,
// each in its own terminal, follow it: one by the journal's path, one by
// the host's name (the driver lock names the journal). A note the driver
// types reaches both within 2 s; the followers' keys that act never do.
func TestFollowersSeeTheDriversNoteInTmux(t *testing.T) {
	bin := flightdeckBinary(t)
	h, _, ssh := simHostConfig(t)
	logDir := filepath.Dir(h.LogPath)
	flags := strings.Join(ssh, " ")
	s := startTmux(t, 160, 40, bin+" connect sim "+flags)
	drv := win{s: s, name: "e2e"}
	drv.wait(20*time.Second, has("connected"))

	// The lock names the driver's journal on the host: its mirror.
	var info event.DriverInfo
	deadline := time.Now().Add(10 * time.Second)
	for info.Journal == "" {
		b, err := os.ReadFile(filepath.Join(logDir, driver.FileName))
		if err == nil {
			_ = json.Unmarshal(b, &info)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no driver lock with a journal in %s: %v %s", logDir, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() { os.Remove(info.Journal) }) // the mirror, in this user's home
	if _, err := os.Stat(info.Journal); err != nil {
		t.Fatalf("the lock names the mirror %s before it exists: %v", info.Journal, err)
	}
	if !strings.Contains(info.Journal, "/.flightdeck/journals/") {
		t.Errorf("the lock's journal %q is not the mirror on the host", info.Journal)
	}

	cache := "XDG_CACHE_HOME=" + t.TempDir() + " "
	byPath := s.open("bypath", 140, 40, cache+bin+" follow "+info.Journal)
	byHost := s.open("byhost", 120, 30, cache+bin+" follow sim "+flags)
	for _, f := range []win{byPath, byHost} {
		// LIVE: caught up with the mirror as it is; the driver's lock
		// state may be in its next flush (a second or so on a loaded
		// host), so the header says who drives within the same bound.
		f.wait(20*time.Second, func(screen string) string {
			head := strings.SplitN(screen, "\n", 2)[0]
			switch {
			case !strings.Contains(screen, "LIVE"):
				return "screen lacks LIVE"
			case !strings.Contains(head, "flightdeck  follow") || !strings.Contains(head, "driver "+info.Who()):
				return fmt.Sprintf("header %q does not say follow and who drives", head)
			}
			return ""
		})
	}

	drv.keys("n")
	drv.wait(5*time.Second, has("free text; enter saves"))
	s.tmux("send-keys", "-t", "e2e:0.0", "-l", "suspect NCCL_ALGO on the ring")
	drv.keys("Enter")
	drv.wait(5*time.Second, has("note saved"))
	saved := time.Now()
	for _, f := range []win{byPath, byHost} {
		// The follower's status line shows the driver's note as it comes.
		f.wait(2*time.Second-time.Since(saved)+500*time.Millisecond, has("suspect NCCL_ALGO on the ring"))
		t.Logf("%s shows the note %v after it was saved", f.name, time.Since(saved).Round(10*time.Millisecond))
	}

	// The followers' keys that act say so and do nothing.
	for _, f := range []win{byPath, byHost} {
		for _, k := range []string{"K", "L", "p", "n", "e", "b"} {
			f.keys(k)
			time.Sleep(250 * time.Millisecond)
			screen := f.capture()
			lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
			// The footer, above the timeline.
			if footer := lines[len(lines)-2]; !strings.Contains(footer, "follow: read-only") {
				t.Errorf("%s: %s answered %q", f.name, k, footer)
			}
			if strings.Contains(screen, "free text; enter saves") || strings.Contains(screen, "Kill ") {
				t.Errorf("%s: %s opened an action:\n%s", f.name, k, screen)
			}
		}
	}
	// Nothing a follower pressed reached the driver's journal.
	if strings.Count(drv.capture(), "read-only") != 0 {
		t.Errorf("the driver turned read-only:\n%s", drv.capture())
	}
}
