package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// upload runs uploadScript on this machine with shell ("sh", or
// "busybox sh"), sending data as the agent of version key, and returns
// its stdout.
func upload(t *testing.T, shell, cache, key string, data []byte) string {
	t.Helper()
	sum := sha256.Sum256(data)
	sh := strings.Fields(shell)
	cmd := exec.Command(sh[0], append(sh[1:], "-c", uploadScript, "flightdeck-agent", cache, key, hex.EncodeToString(sum[:]))...)
	cmd.Stdin = strings.NewReader(string(data))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("upload script: %v\n%s", err, out)
	}
	return string(out)
}

// version makes a cached agent version directory last used age ago, with
// the given files (name → content; "->target" makes a symbolic link).
func version(t *testing.T, cache, key string, age time.Duration, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(cache, "agent", key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o700)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(dir, at, at); err != nil {
		t.Fatal(err)
	}
	return dir
}

// entries lists a directory's names, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

const day = 24 * time.Hour

// An upload prunes the other versions unused for more than 14 days, and
// all but the 3 newest, removing only the agent files the user owns and
// never following a link.
func TestUploadPrunesOldVersions(t *testing.T) {
	for _, shell := range []string{"sh", "bash", "busybox sh"} {
		t.Run(shell, func(t *testing.T) {
			if _, err := exec.LookPath(strings.Fields(shell)[0]); err != nil {
				t.Skipf("no %s", shell)
			}
			testPrune(t, shell)
		})
	}
}

func testPrune(t *testing.T, shell string) {
	cache := filepath.Join(t.TempDir(), "cache")
	outside := t.TempDir() // must survive whatever points at it
	outsideFile := filepath.Join(outside, "flightdeck")
	if err := os.WriteFile(outsideFile, []byte("not ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	version(t, cache, "v0.7", 1*day, map[string]string{"flightdeck": "a"})
	version(t, cache, "v0.6", 2*day, map[string]string{"flightdeck": "a"})
	version(t, cache, "v0.4", 3*day, map[string]string{"flightdeck": "a"})         // 3 newer ones
	version(t, cache, "v0.5", 30*day, map[string]string{"flightdeck": "a"})        // unused for 30 days
	version(t, cache, "v0.1", 15*day, map[string]string{".flightdeck.x1": "half"}) // a failed upload's leftover
	version(t, cache, "v0.3", 20*day, map[string]string{"flightdeck": "a", "notes": "someone's"})
	version(t, cache, "v0.2", 30*day, map[string]string{"flightdeck": "->" + outsideFile})
	version(t, cache, "odd name", 30*day, map[string]string{"flightdeck": "a"})
	version(t, cache, "sha256-0123456789abcdef", 13*day, map[string]string{"flightdeck": "a"}) // 3 newer ones
	if err := os.Symlink(outside, filepath.Join(cache, "agent", "v0.0")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * day)
	if err := os.Chtimes(outside, old, old); err != nil {
		t.Fatal(err)
	}
	var foreign string
	if os.Geteuid() == 0 {
		foreign = version(t, cache, "v0.0-foreign", 30*day, map[string]string{"flightdeck": "theirs"})
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(foreign, old, old); err != nil {
			t.Fatal(err)
		}
	}

	out := upload(t, shell, cache, "v1", []byte("the new agent"))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	wantOut := []string{"path " + filepath.Join(cache, "agent", "v1", "flightdeck"),
		"pruned sha256-0123456789abcdef", "pruned v0.1", "pruned v0.4", "pruned v0.5"}
	if !slices.Equal(lines, wantOut) {
		t.Errorf("upload printed %q, want %q", lines, wantOut)
	}
	want := []string{"odd name", "v0.0", "v0.2", "v0.3", "v0.6", "v0.7", "v1"}
	if foreign != "" {
		want = slices.Insert(want, 2, "v0.0-foreign")
	}
	if got := entries(t, filepath.Join(cache, "agent")); !slices.Equal(got, want) {
		t.Errorf("versions left %q, want %q", got, want)
	}
	// Only the user's own agent files went; what is not ours stays.
	for dir, files := range map[string][]string{
		"v0.3":     {"notes"},      // its agent removed, the directory kept
		"v0.2":     {"flightdeck"}, // a link: left alone
		"odd name": {"flightdeck"}, // not a name flightdeck makes
		"v0.6":     {"flightdeck"}, // among the 3 newest
		"v1":       {"flightdeck"}, // the new one
		"v0.0":     {"flightdeck"}, // a link to a directory: not followed
	} {
		if got := entries(t, filepath.Join(cache, "agent", dir)); !slices.Equal(got, files) {
			t.Errorf("%s holds %q, want %q", dir, got, files)
		}
	}
	if b, err := os.ReadFile(outsideFile); err != nil || string(b) != "not ours" {
		t.Errorf("a link's target was touched: %q, %v", b, err)
	}
	if foreign != "" {
		if got := entries(t, foreign); !slices.Equal(got, []string{"flightdeck"}) {
			t.Errorf("another user's version was touched: %q", got)
		}
	}
}

// Starting an agent marks its version used: a version installed long ago
// but started today is not pruned.
func TestRunMarksTheVersionUsed(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	agent := "#!/bin/sh\necho \"$@\"\n"
	version(t, cache, "v0.9", 30*day, map[string]string{"flightdeck": agent})
	version(t, cache, "v0.8", 30*day, map[string]string{"flightdeck": agent})
	sum := sha256.Sum256([]byte(agent))
	out, err := exec.Command("sh", "-c", runScript, "flightdeck-agent", cache, "v0.9", hex.EncodeToString(sum[:]), "agent", "--once").Output()
	if err != nil || !strings.HasSuffix(string(out), "\nagent --once\n") {
		t.Fatalf("run script: %v, %q", err, out)
	}
	if out := upload(t, "sh", cache, "v1", []byte("the new agent")); !strings.HasSuffix(out, "\npruned v0.8\n") {
		t.Errorf("upload printed %q, want v0.8 pruned", out)
	}
	if got := entries(t, filepath.Join(cache, "agent")); !slices.Equal(got, []string{"v0.9", "v1"}) {
		t.Errorf("versions left %q, want v0.9 (used today) and v1", got)
	}
}
