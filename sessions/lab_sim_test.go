package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// simHost starts a simulated host (no server) and connects to it over its
// SSH server.
func simHost(t *testing.T, ctx context.Context) (*sim.Host, remote.Host) {
	t.Helper()
	h, err := sim.Start(ctx, sim.Options{GPUs: 2, Seed: 3, History: 3}) // the short story: the pull names pynccl.py
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	host, err := remote.DialSSH(ctx, h.Target(), remote.SSHOptions{ConfigFile: os.DevNull,
		IdentityFiles: []string{h.IdentityPath}, KnownHostsFiles: []string{h.KnownHostsPath}, NoAgent: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	return h, host
}

// run runs a command locally (the simulated host is this machine) and
// returns its stdout.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return string(out)
}

// TestLabFingerprintOnSimHost: a launch of the sim preset on the simulated
// host starts an experiment whose fingerprint has everything: host name and
// kernel, the dirty checkout (patch stored with its hash, the untracked
// file, the stash), the redacted launch, the versions answered by the
// host's fake commands, the GPUs of the last sample; the default name gets
// the commit once the fingerprint has read it.
func TestLabFingerprintOnSimHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, host := simHost(t, ctx)
	repoDir := h.RepoPath
	pynccl := filepath.Join(repoDir, sim.PyncclPath)
	if err := os.WriteFile(pynccl, []byte("# stashed try\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, repoDir, "git", "stash", "push", "-q", "-m", "try LL128")
	orig, err := os.ReadFile(pynccl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pynccl, append(orig, "\n# NCCL_PROTO=LL tried here\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repoDir, "bench-notes.txt"), []byte("89 tok/s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	patch := run(t, repoDir, "git", "diff", "HEAD", "--binary")
	sum := sha256.Sum256([]byte(patch))
	head := strings.TrimSpace(run(t, repoDir, "git", "rev-parse", "HEAD"))

	rig := newLabRig(&Lab{Host: host, RepoPath: repoDir, Config: config.Builtins(), Preset: "sglang"})
	defer rig.lab.Close(ctx)
	// The sample before the launch is the old server's: the fingerprint
	// takes the first one after it.
	rig.publish(event.Event{At: time.Now(), Data: event.GPUSample{GPUs: []event.GPU{{Index: 0}, {Index: 1}, {Index: 2}}}})
	rig.publish(event.Event{At: time.Now(), Data: launched("nccl-ll-ring")})
	time.Sleep(100 * time.Millisecond)
	rig.publish(event.Event{At: time.Now(), Data: event.GPUSample{GPUs: []event.GPU{{Index: 0}, {Index: 1}}}})

	fp := count[event.ExperimentFingerprint](t, rig.rec, "the fingerprint", 1)[0]
	f := fp.Fingerprint
	if fp.Exp != "e1" || len(f.Errors) != 0 {
		t.Errorf("fingerprint of %s, errors %q", fp.Exp, f.Errors)
	}
	if want := strings.TrimSpace(run(t, "", "uname", "-n")); f.Hostname != want {
		t.Errorf("hostname %q, want %q", f.Hostname, want)
	}
	if want := strings.TrimSpace(run(t, "", "uname", "-r")); f.Kernel != want {
		t.Errorf("kernel %q, want %q", f.Kernel, want)
	}
	var names []string
	for _, v := range f.Versions {
		names = append(names, v.Name)
		if v.Value != sim.Versions[v.Name] || v.Err != "" || v.Command != "flightdeck sim version "+v.Name {
			t.Errorf("version %+v, want %q from the fake command", v, sim.Versions[v.Name])
		}
	}
	if want := []string{"driver", "cuda", "nccl", "torch", "sglang", "python"}; !slices.Equal(names, want) {
		t.Errorf("versions %v, want %v", names, want)
	}
	g := f.Git
	if g == nil {
		t.Fatal("no git state")
	}
	if g.Head != head || g.Branch != "main" || g.Subject == "" || g.Repo != repoDir {
		t.Errorf("git %s on %q (%q) in %s, want %s on main", g.Head, g.Branch, g.Subject, g.Repo, head)
	}
	if g.Patch != patch || g.PatchSHA256 != hex.EncodeToString(sum[:]) || g.PatchBytes != len(patch) || g.PatchTruncated || !strings.Contains(g.Patch, "NCCL_PROTO=LL tried here") {
		t.Errorf("patch of %d bytes, sha %s; want %d bytes, sha %x", g.PatchBytes, g.PatchSHA256, len(patch), sum)
	}
	if !slices.Equal(g.Untracked, []string{"bench-notes.txt"}) || !slices.Equal(g.Stashes, []string{"stash@{0}: On main: try LL128"}) {
		t.Errorf("untracked %q, stashes %q", g.Untracked, g.Stashes)
	}
	if f.Launch == nil || f.Launch.Env["HF_TOKEN"] != "<redacted>" || strings.Contains(f.CommandLine, "sk-live") || !strings.Contains(f.CommandLine, "--api-key '<redacted>'") {
		t.Errorf("launch %+v, command line %q", f.Launch, f.CommandLine)
	}
	if len(f.GPUs) != 2 {
		t.Errorf("%d GPUs", len(f.GPUs))
	}
	// Named before HEAD was known; the fingerprint completes the name.
	start := of[event.ExperimentStart](rig.rec.snapshot())[0]
	up := count[event.ExperimentUpdate](t, rig.rec, "the name update", 1)[0]
	if start.Name != "nccl-ll-ring" || up.Exp != "e1" || up.Name != "nccl-ll-ring @ "+git.ShortID(head) {
		t.Errorf("named %q, then %+v", start.Name, up)
	}
	if cur, ok := rig.lab.Current(); !ok || cur.Name != up.Name || cur.Fingerprint == nil {
		t.Errorf("current %+v", cur)
	}
}

// TestLabProbesThatFailOrHang: probes that fail, hang (sleep 600) or print
// nothing are recorded as failed within their deadline, each with why;
// Start and End return at once while the capture runs.
func TestLabProbesThatFailOrHang(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, host := simHost(t, ctx)
	cfg, err := config.Parse("lab.toml", []byte(`
[presets.p]
command = "flightdeck sim server --model-path {model}"
[presets.p.versions]
driver = "flightdeck sim version driver"
torch  = "sleep 600"
nccl   = "echo 'libnccl.so.2: cannot open shared object file' >&2; exit 3"
cuda   = "true"
sglang = 'printf "Traceback (most recent call last):\n  File x\nModuleNotFoundError: No module named sglang\n" >&2; exit 1'
python = "flightdeck sim version nope"
`))
	if err != nil {
		t.Fatal(err)
	}
	const timeout = time.Second
	rig := newLabRig(&Lab{Host: host, RepoPath: filepath.Join(h.Dir, "not-a-repo"), Config: cfg, Preset: "p", ProbeTimeout: timeout})
	defer rig.lab.Close(ctx)
	s, err := rig.lab.Start(ctx, "probes", "")
	if err != nil {
		t.Fatal(err)
	}
	// The hung probe holds the fingerprint for its whole deadline; Start
	// has returned without it.
	if n := len(of[event.ExperimentFingerprint](rig.rec.snapshot())); n != 0 {
		t.Fatalf("Start waited for the fingerprint (%d published)", n)
	}
	if _, err := rig.lab.End(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	if n := len(of[event.ExperimentFingerprint](rig.rec.snapshot())); n != 0 {
		t.Fatalf("End waited for the fingerprint (%d published)", n)
	}
	fp := count[event.ExperimentFingerprint](t, rig.rec, "the fingerprint", 1)[0]
	if fp.Exp != s.ID {
		t.Errorf("fingerprint of %s", fp.Exp)
	}
	got := map[string]event.Version{}
	for _, v := range fp.Fingerprint.Versions {
		got[v.Name] = v
	}
	for name, want := range map[string]string{
		"driver": "",
		"torch":  "timed out after 1s",
		"nccl":   "exit status 3: libnccl.so.2: cannot open shared object file",
		"cuda":   "no output",
		"sglang": "exit status 1: ModuleNotFoundError: No module named sglang",
		"python": `exit status 1: flightdeck sim version: no simulated version of "nope" (known: cuda, driver, nccl, python, sglang, torch, vllm)`,
	} {
		if v := got[name]; v.Err != want {
			t.Errorf("%s: err %q, want %q (value %q)", name, v.Err, want, v.Value)
		}
	}
	if v := got["torch"]; v.Millis >= 60_000 {
		t.Errorf("the hung probe took %d ms: its deadline was not kept", v.Millis)
	}
	if v := got["driver"]; v.Value != sim.Versions["driver"] {
		t.Errorf("driver %+v", v)
	}
	// Not a repository, and no GPU sample within the deadline (none is
	// published here): recorded, not fatal; the rest is there.
	f := fp.Fingerprint
	if f.Git == nil || f.Git.Head != "" || len(f.Errors) != 2 || !strings.HasPrefix(f.Errors[0], "git: ") || f.Errors[1] != "gpus: no GPU sample within 1s" || f.Hostname == "" {
		t.Errorf("git %+v, errors %q, hostname %q", f.Git, f.Errors, f.Hostname)
	}
}

// TestLabWaitsForTheFirstGPUSample: an experiment started before any GPU
// sample (the demo launches at once) gets the GPUs of the first sample that
// arrives while its probes run.
func TestLabWaitsForTheFirstGPUSample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, host := simHost(t, ctx)
	rig := newLabRig(&Lab{Host: host, Preset: "sim", ProbeTimeout: 10 * time.Second})
	defer rig.lab.Close(ctx)
	if _, err := rig.lab.Start(ctx, "first", ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	rig.publish(event.Event{At: time.Now(), Data: event.GPUSample{At: time.Now(), GPUs: []event.GPU{{Index: 0}, {Index: 1}}}})
	fp := count[event.ExperimentFingerprint](t, rig.rec, "the fingerprint", 1)[0].Fingerprint
	if len(fp.GPUs) != 2 || slices.ContainsFunc(fp.Errors, func(e string) bool { return strings.HasPrefix(e, "gpus:") }) {
		t.Errorf("GPUs %d, errors %q", len(fp.GPUs), fp.Errors)
	}
}
