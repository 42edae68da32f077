package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote"
)

func TestHostPlatform(t *testing.T) {
	cases := map[string]string{
		"Linux x86_64":    "linux/amd64",
		"Linux aarch64":   "linux/arm64",
		"Linux arm64":     "linux/arm64",
		"Darwin arm64":    "darwin/arm64",
		"Linux ppc64le":   "linux/ppc64le",
		"Linux armv7l":    "linux/arm",
		"Linux i686":      "linux/386",
		"FreeBSD amd64":   "freebsd/amd64",
		"Linux sparc64":   "linux/sparc64",
		"  Linux x86_64 ": "linux/amd64",
		"":                "unknown (uname -sm: )",
		"Linux":           "unknown (uname -sm: Linux)",
	}
	for in, want := range cases {
		if got := hostPlatform(in); got != want {
			t.Errorf("hostPlatform(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVersionKey(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	cases := map[string]string{
		"v0.8.0":                 "v0.8.0",
		"devel-1a2b3c-dirty":     "devel-1a2b3c-dirty",
		"(unknown)":              "_unknown_",
		"../../etc":              "_._.._etc",
		"a/b c":                  "a_b_c",
		"":                       "sha256-abababababababab",
		"v1+build.5":             "v1+build.5",
		strings.Repeat("x", 150): strings.Repeat("x", 100),
	}
	for in, want := range cases {
		if got := versionKey(in, sum); got != want {
			t.Errorf("versionKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseProbe(t *testing.T) {
	p, err := parseProbe([]byte("uname Linux x86_64\npath /root/.cache/flightdeck/agent/v1/flightdeck\nnvml yes\ntool yes\ncache ok\nsum ABCDEF\n"))
	if err != nil || p.uname != "Linux x86_64" || p.path != "/root/.cache/flightdeck/agent/v1/flightdeck" || !p.tool || p.cache != "ok" || p.sum != "abcdef" || p.nvml != "yes" {
		t.Errorf("parseProbe: %+v, %v", p, err)
	}
	p, err = parseProbe([]byte("uname Linux x86_64\r\npath /a b/flightdeck\r\nnvml no\r\ntool no\r\ncache not-owned /a b\r\nsum none\r\n"))
	if err != nil || p.path != "/a b/flightdeck" || p.tool || p.cache != "not-owned /a b" || p.sum != "" || p.nvml != "no" {
		t.Errorf("parseProbe: %+v, %v", p, err)
	}
	for _, bad := range []string{"", "uname Linux x86_64\n", "welcome to the host\n\x1b[2J", "uname a b\npath \nnvml yes\ntool yes\ncache ok\nsum none\n",
		"uname Linux x86_64\npath /p\nnvml yes\ntool yes\nsum none\n", "uname Linux x86_64\npath /p\nnvml yes\ntool yes\ncache \nsum none\n",
		"uname Linux x86_64\npath /p\ntool yes\ncache ok\nsum none\n", "uname Linux x86_64\npath /p\nnvml \ntool yes\ncache ok\nsum none\n"} {
		if _, err := parseProbe([]byte(bad)); err == nil {
			t.Errorf("parseProbe(%q) accepted", bad)
		} else if strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("error not sanitised: %q", err)
		}
	}
}

// toolPath makes a PATH directory holding only the commands the install
// scripts need, plus extra (a SHA-256 tool, or a fake one).
func toolPath(t *testing.T, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range append([]string{"sh", "uname", "mkdir", "mktemp", "cat", "chmod", "mv", "rm", "ls"}, extra...) {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("%s not installed", name)
		}
		if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// installLocal runs the Runner's install step on this machine with PATH
// set to path.
func installLocal(t *testing.T, path, cache, binary string) (installed, error) {
	t.Helper()
	t.Setenv("PATH", path)
	old := nvmlCompiled
	nvmlCompiled = func() bool { return true }
	t.Cleanup(func() { nvmlCompiled = old })
	r := &Runner{Host: remote.NewLocal(), Binary: binary, Version: "v1", CacheDir: cache}
	c, err := r.settings()
	if err != nil {
		t.Fatal(err)
	}
	return r.install(context.Background(), c)
}

// TestInstallWithEachTool: sha256sum, shasum -a 256 and openssl dgst each
// verify an upload, and the second install finds the cached copy.
func TestInstallWithEachTool(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "flightdeck")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho agent\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range [][]string{{"sha256sum"}, {"shasum", "perl"}, {"openssl"}} {
		t.Run(tool[0], func(t *testing.T) {
			path := toolPath(t, tool...)
			cache := filepath.Join(t.TempDir(), "cache dir")
			inst, err := installLocal(t, path, cache, bin)
			want := filepath.Join(cache, "agent", "v1", "flightdeck")
			if err != nil || inst.how != "uploaded" || inst.path != want {
				t.Fatalf("first install: %+v, %v", inst, err)
			}
			inst, err = installLocal(t, path, cache, bin)
			if err != nil || inst.how != "cached" || inst.path != want {
				t.Fatalf("second install: %+v, %v", inst, err)
			}
		})
	}
}

func TestInstallRefusals(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "flightdeck")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho agent\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A sha256sum that answers a wrong sum: the upload is not trusted.
	liar := toolPath(t)
	if err := os.WriteFile(filepath.Join(liar, "sha256sum"), []byte("#!/bin/sh\necho 0000 -\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// No mktemp: no predictable name instead, the upload is refused.
	noTemp := toolPath(t, "sha256sum")
	if err := os.Remove(filepath.Join(noTemp, "mktemp")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, cache, want string
	}{
		{"no tool", toolPath(t), t.TempDir(), "no sha256sum on host"},
		{"no mktemp", noTemp, t.TempDir(), "upload refused: cannot make a private temporary file: no working mktemp on the host"},
		{"checksum mismatch", liar, t.TempDir(), "checksum mismatch after upload (got 0000)"},
		{"cache not writable", toolPath(t, "sha256sum"), "/proc/flightdeck-test", "upload refused: exit status 20: mkdir"},
		{"cache dir with newline", toolPath(t, "sha256sum"), "a\nb", "agent cache directory: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := installLocal(t, c.path, c.cache, bin)
			var fr fallbackReason
			if !errors.As(err, &fr) || !strings.HasPrefix(string(fr), c.want) {
				t.Fatalf("install: %v, want a fallback starting %q", err, c.want)
			}
			if left, _ := filepath.Glob(filepath.Join(c.cache, "agent", "v1", ".flightdeck.*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

func TestBinarySumIsCached(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(p, []byte("one"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := binarySum(p)
	if err != nil || a != "7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed" {
		t.Fatalf("binarySum: %s, %v", a, err)
	}
	// The same size and time: the cached sum is returned without reading.
	st, _ := os.Stat(p)
	if err := os.WriteFile(p, []byte("two"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if b, _ := binarySum(p); b != a {
		t.Errorf("sum computed again: %s", b)
	}
	if _, err := binarySum(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("binarySum of a missing file succeeded")
	}
}

// A cache another user owns (who could swap the agent between its check
// and its start), or a cached agent that is a symbolic link, is refused
// with the reason, even when the checksum would match.
func TestInstallRefusesForeignOrLinkedCache(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "flightdeck")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho agent\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := toolPath(t, "sha256sum")

	t.Run("symlink", func(t *testing.T) {
		cache := t.TempDir()
		dir := filepath.Join(cache, "agent", "v1")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(bin, filepath.Join(dir, "flightdeck")); err != nil {
			t.Fatal(err)
		}
		_, err := installLocal(t, path, cache, bin)
		want := "cached agent " + filepath.Join(dir, "flightdeck") + " is a symbolic link: refusing it"
		if fr, ok := errors.AsType[fallbackReason](err); !ok || string(fr) != want {
			t.Errorf("install: %v, want %q", err, want)
		}
	})
	t.Run("not owned", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("giving a directory to another user needs root")
		}
		for _, level := range []string{"", "agent", "agent/v1"} {
			cache := filepath.Join(t.TempDir(), "cache")
			if err := os.MkdirAll(filepath.Join(cache, "agent", "v1"), 0o755); err != nil {
				t.Fatal(err)
			}
			foreign := filepath.Join(cache, level)
			if err := os.Chown(foreign, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			_, err := installLocal(t, path, cache, bin)
			want := "agent cache " + foreign + " is not owned by the login user: refusing it"
			if fr, ok := errors.AsType[fallbackReason](err); !ok || string(fr) != want {
				t.Errorf("%q foreign: install: %v, want %q", level, err, want)
			}
			if _, err := os.Stat(filepath.Join(cache, "agent", "v1", "flightdeck")); err == nil {
				t.Errorf("%q foreign: an agent was uploaded", level)
			}
		}
	})
}

// The upload script refuses a foreign cache by itself too (the probe and
// the upload are separate sessions).
func TestUploadScriptRefusesForeignCache(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	cache := t.TempDir()
	dir := filepath.Join(cache, "agent", "v1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", uploadScript, "flightdeck-agent", cache, "v1", strings.Repeat("0", 64))
	cmd.Stdin = strings.NewReader("agent")
	out, err := cmd.CombinedOutput()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != exitRefused ||
		strings.TrimSpace(string(out)) != scriptRefusal+"not-owned "+dir {
		t.Errorf("upload into a foreign cache: %v, %q", err, out)
	}
}

// runProbe runs probeScript on this machine with exactly env.
func runProbe(t *testing.T, env ...string) probeResult {
	t.Helper()
	cmd := exec.Command("sh", "-c", probeScript, "flightdeck-agent", filepath.Join(t.TempDir(), "cache"), "v1")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe script: %v\n%s", err, out)
	}
	p, err := parseProbe(out)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// hostHasDriver reports whether this machine's loader would find a
// libnvidia-ml.so.1 (then "no driver" cannot be shown here).
func hostHasDriver(t *testing.T) bool {
	return runProbe(t, "PATH="+os.Getenv("PATH")).nvml != "no"
}

// The install check's driver pre-check: where it looks, and that only a
// clear "no" counts as absent.
func TestProbeFindsTheDriver(t *testing.T) {
	fake := fakeDriverDir(t)
	path := "PATH=" + os.Getenv("PATH")
	cases := []struct {
		name string
		env  []string
		want string
	}{
		{"LD_LIBRARY_PATH", []string{path, "LD_LIBRARY_PATH=/nonexistent:" + fake + ":"}, "yes"},
		{"LD_LIBRARY_PATH with a glob", []string{path, "LD_LIBRARY_PATH=" + filepath.Dir(fake) + "/*"}, ""},
		{"simulated host", []string{path, "FLIGHTDECK_SIM_NVML=/srv/sim"}, "sim"},
		{"simulated host, empty", []string{path, "FLIGHTDECK_SIM_NVML="}, ""},
		// Without grep nothing can read the loader's cache: not a "no".
		{"no grep", []string{"PATH=" + toolPath(t)}, "unknown"},
	}
	driver := hostHasDriver(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == "unknown" && driver {
				t.Skip("this machine's driver may be found without grep")
			}
			if want == "" {
				// What this machine has: "no" without a driver.
				want = "no"
				if driver {
					want = "yes"
				}
			}
			if got := runProbe(t, c.env...).nvml; got != want {
				t.Errorf("nvml %q, want %q", got, want)
			}
		})
	}
}

// A host without libnvidia-ml.so.1 gets no upload: the install check says
// why, in one command.
func TestInstallWithoutDriverUploadsNothing(t *testing.T) {
	if hostHasDriver(t) {
		t.Skip("this machine has libnvidia-ml.so.1")
	}
	bin := filepath.Join(t.TempDir(), "flightdeck")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho agent\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Setenv("FLIGHTDECK_SIM_NVML", "")
	cache := filepath.Join(t.TempDir(), "cache")
	_, err := installLocal(t, toolPath(t, "sha256sum", "grep"), cache, bin)
	if fr, ok := errors.AsType[fallbackReason](err); !ok || fr != errNoDriver ||
		string(fr) != "no NVIDIA driver on the host (libnvidia-ml.so.1 not found)" {
		t.Fatalf("install: %v, want %q", err, errNoDriver)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("the cache was made: %v", err)
	}
}
