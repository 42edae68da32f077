package hostdiff

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

const (
	good = "a6d51c0c6f1e6a8d2b0a6c1f9b9d4e2f3a4b5c6d"
	bad  = "e7b9c70aa1b2c3d4e5f60718293a4b5c6d7e8f90"
)

var t0 = time.Date(2026, 12, 1, 10, 15, 0, 0, time.Local)

func gpu(i int, name string, gen, width float64) event.GPU {
	r := func(v float64) event.Reading { return event.Reading{Value: v} }
	return event.GPU{Index: i, Name: event.Text{S: name}, BusID: event.Text{S: "0000:0" + string(rune('0'+i)) + ":00.0"},
		PCIeGenMax: r(gen), PCIeWidthMax: r(width), PCIeGenCurrent: r(1), PCIeWidthCurrent: r(16)}
}

// state is a full fingerprint at a6d51c0: every group known.
func state() event.Fingerprint {
	return event.Fingerprint{At: t0, Hostname: "gpu-box", Kernel: "6.8.0-49",
		Git:      &event.GitState{Repo: "/srv/sglang", Head: good, Branch: "main"},
		Versions: []event.Version{{Name: "driver", Value: "570.86"}, {Name: "torch", Value: "2.5.1"}, {Name: "nccl", Value: "2.21.5"}},
		GPUs:     []event.GPU{gpu(0, "NVIDIA H200", 5, 16), gpu(1, "NVIDIA H200", 5, 16)},
		Launch:   &event.LaunchInfo{Argv: []string{"python", "-m", "sglang.launch_server", "--tp", "8"}, Env: map[string]string{"NCCL_ALGO": "Ring", "HF_TOKEN": "<redacted>"}},
	}
}

func TestCompare(t *testing.T) {
	pull := Between{
		Reflog: []event.RefEntry{
			{Short: "e7b9c70", Action: "pull", Message: "pull: Fast-forward", Time: t0.Add(2 * time.Hour)},
			{Short: "a6d51c0", Action: "checkout", Message: "checkout: moving from x to main", Time: t0.Add(-time.Hour)},
		},
		Range: &event.CommitRange{From: good, To: bad, Ahead: []string{"e7b9c70 [CI] Raise the nightly benchmark timeout", "65b09bf Fix PCG MoE Error", "1234567 x"},
			AheadTotal: 3, Files: []string{"python/sglang/srt/distributed/device_communicators/pynccl.py", "python/sglang/srt/distributed/parallel_state.py", "test/ci.yml"}, FilesTotal: 3},
	}
	cases := []struct {
		name   string
		change func(f *event.Fingerprint)
		b      Between
		want   []string // ChangeText of each change, files 2
	}{
		{"nothing changed", func(*event.Fingerprint) {}, Between{}, nil},
		{"HEAD by git pull", func(f *event.Fingerprint) { f.Git.Head = bad }, pull,
			[]string{"HEAD a6d51c0 -> e7b9c70 by git pull, 3 commits, touches pynccl.py, parallel_state.py +1 more"}},
		{"HEAD without the reflog", func(f *event.Fingerprint) { f.Git.Head = bad }, Between{}, []string{"HEAD a6d51c0 -> e7b9c70"}},
		{"branch", func(f *event.Fingerprint) { f.Git.Branch = "" }, Between{}, []string{"branch main -> detached"}},
		{"dirty patch", func(f *event.Fingerprint) {
			f.Git.Patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n-a\n+b\n+c\n"
			f.Git.PatchSHA256, f.Git.PatchBytes = "abcdef0123456789", 60
		}, Between{}, []string{"patch clean -> 1 file, +2 -1"}},
		{"versions", func(f *event.Fingerprint) { f.Versions[1].Value = "2.6.0"; f.Versions[2].Value = "2.26.2" }, Between{},
			[]string{"torch 2.5.1 -> 2.6.0", "nccl 2.21.5 -> 2.26.2"}},
		{"a GPU gone", func(f *event.Fingerprint) { f.GPUs = f.GPUs[:1] }, Between{}, []string{"GPU 1 gone (NVIDIA H200)"}},
		{"a GPU whose handle fails", func(f *event.Fingerprint) { f.GPUs[1] = event.MissingGPU(1, nil) }, Between{}, []string{"GPU 1 NVIDIA H200 -> lost"}},
		{"a GPU renamed", func(f *event.Fingerprint) { f.GPUs[0].Name.S = "NVIDIA H100" }, Between{}, []string{"GPU 0 NVIDIA H200 -> NVIDIA H100"}},
		{"PCIe trained down", func(f *event.Fingerprint) { f.GPUs[1] = gpu(1, "NVIDIA H200", 4, 8) }, Between{}, []string{"GPU 1 PCIe Gen5 x16 -> Gen4 x8"}},
		{"the idle current link is no change", func(f *event.Fingerprint) { f.GPUs[1].PCIeGenCurrent.Value = 5 }, Between{}, nil},
		{"the link trained down to x8", func(f *event.Fingerprint) { f.GPUs[1].PCIeWidthCurrent.Value = 8 }, Between{}, []string{"GPU 1 PCIe width x16 -> x8"}},
		{"launch command and env", func(f *event.Fingerprint) {
			f.Launch = &event.LaunchInfo{Argv: []string{"python", "-m", "sglang.launch_server", "--tp", "4"}, Env: map[string]string{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "HF_TOKEN": "<redacted>"}}
		}, Between{}, []string{"launch command changed: python -m sglang.launch_server --tp 4", "env NCCL_ALGO Ring -> Tree", "env NCCL_PROTO unset -> LL"}},
		{"kernel", func(f *event.Fingerprint) { f.Kernel = "6.8.0-51" }, Between{}, []string{"kernel 6.8.0-49 -> 6.8.0-51"}},
		// Unknown on one side is not a change.
		{"no checkout read now", func(f *event.Fingerprint) { f.Git = nil }, Between{}, nil},
		{"HEAD unknown now", func(f *event.Fingerprint) { f.Git.Head = ""; f.Git.Branch = "other" }, Between{}, nil},
		{"a probe failed", func(f *event.Fingerprint) { f.Versions[1] = event.Version{Name: "torch", Err: "timed out after 10s"} }, Between{}, nil},
		{"a probe missing", func(f *event.Fingerprint) { f.Versions = f.Versions[:1] }, Between{}, nil},
		{"no GPU sample", func(f *event.Fingerprint) { f.GPUs = nil }, Between{}, nil},
		{"no link reading", func(f *event.Fingerprint) {
			f.GPUs[0].PCIeGenMax.Status, f.GPUs[0].PCIeGenCurrent.Status = event.CellNA, event.CellNA
		}, Between{}, nil},
		{"the patch not read now", func(f *event.Fingerprint) {
			f.Errors = append(f.Errors, "git patch: timed out after 10s") // and no hash: not "clean"
		}, Between{}, nil},
		{"no launch known", func(f *event.Fingerprint) { f.Launch = nil }, Between{}, nil},
		{"no kernel", func(f *event.Fingerprint) { f.Kernel = "" }, Between{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			was, now := state(), state()
			c.change(&now)
			var got []string
			for _, ch := range Compare(was, now, c.b) {
				got = append(got, ChangeText(ch, 2))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("changes\n%q\nwant\n%q", got, c.want)
			}
			// Unknown on the other side neither.
			if c.want == nil {
				if back := Compare(now, was, c.b); len(back) != 0 {
					t.Errorf("reversed: %+v", back)
				}
			}
		})
	}
}

// The reflog entries kept are those since the earlier state, oldest first,
// in the details with the commits and files.
func TestCompareReflog(t *testing.T) {
	was, now := state(), state()
	now.Git.Head = bad
	b := Between{Reflog: []event.RefEntry{
		{Short: "e7b9c70", Action: "pull", Message: "pull: Fast-forward", Time: t0.Add(3 * time.Hour)},
		{Short: "1111111", Action: "reset", Message: "reset: moving to HEAD~1", Time: t0.Add(2 * time.Hour)},
		{Short: "a6d51c0", Action: "checkout", Message: "checkout: moving from x to main", Time: t0.Add(-time.Hour)},
	}, Range: &event.CommitRange{Ahead: []string{"e7b9c70 [CI] x"}, AheadTotal: 1, Files: []string{"a/b.py"}, FilesTotal: 1}}
	chs := Compare(was, now, b)
	if len(chs) != 1 || !slices.Equal(chs[0].How, []string{"reset", "pull"}) {
		t.Fatalf("changes %+v", chs)
	}
	d := strings.Join(chs[0].Detail, "\n")
	for _, want := range []string{"1111111 reset: moving to HEAD~1", "e7b9c70 pull: Fast-forward", "+ e7b9c70 [CI] x", "files a/b.py"} {
		if !strings.Contains(d, want) {
			t.Errorf("details %q lack %q", d, want)
		}
	}
	if strings.Contains(d, "checkout") || strings.Index(d, "reset") > strings.Index(d, "pull") {
		t.Errorf("details %q: want the entries since the state, oldest first", d)
	}
	if got := ChangeText(chs[0], 3); got != "HEAD a6d51c0 -> e7b9c70 by git reset, git pull, 1 commit, touches b.py" {
		t.Errorf("text %q", got)
	}
}

func TestHeadline(t *testing.T) {
	now := t0.Add(17 * time.Hour)
	chs := Compare(state(), func() event.Fingerprint { f := state(); f.Kernel = "6.9"; return f }(), Between{})
	for _, c := range []struct {
		c    event.HostChanges
		want string
	}{
		{event.HostChanges{Host: "gpu-box"}, "first session on this host"},
		{event.HostChanges{Host: "gpu-box", Errs: []string{"journal a: permission denied"}}, "no earlier session found for this host; not read: journal a: permission denied"},
		{event.HostChanges{Seen: true, Since: t0}, "nothing changed since your last session here (2026-12-01 10:15, 17 h ago)"},
		{event.HostChanges{Seen: true, Since: t0, Errs: []string{"reflog: timed out"}}, "nothing changed since your last session here (2026-12-01 10:15, 17 h ago); not read: reflog: timed out"},
		{event.HostChanges{Seen: true, Since: t0, Changes: chs}, "since your last session here (yesterday 10:15): kernel 6.8.0-49 -> 6.9"},
	} {
		if got := Headline(c.c, now, 2); got != c.want {
			t.Errorf("headline %q, want %q", got, c.want)
		}
	}
	lines := Lines(event.HostChanges{Seen: true, Since: t0, Journal: "/j/a.jsonl", Exp: "e2", Changes: chs}, now)
	want := []string{"since your last session here (yesterday 10:15), 17 h ago: 1 change", "  recorded in /j/a.jsonl (e2's fingerprint)", "  kernel 6.8.0-49 -> 6.9"}
	if !slices.Equal(lines, want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
}

// The entry that put HEAD on the earlier state's commit ends the time
// between, even when it has the state's second (the reflog counts whole
// seconds): a clone and reset just before the capture are not "since".
func TestCompareReflogStopsAtTheEarlierHead(t *testing.T) {
	was, now := state(), state()
	now.Git.Head = bad
	b := Between{Reflog: []event.RefEntry{
		{ID: bad, Short: "e7b9c70", Action: "pull", Message: "pull: Fast-forward", Time: t0},
		{ID: good, Short: "a6d51c0", Action: "reset", Message: "reset: moving to a6d51c0", Time: t0},
		{ID: bad, Short: "e7b9c70", Action: "clone", Message: "clone: from upstream", Time: t0},
	}}
	chs := Compare(was, now, b)
	if len(chs) != 1 || !slices.Equal(chs[0].How, []string{"pull"}) || len(chs[0].Detail) != 1 {
		t.Errorf("changes %+v", chs)
	}
}

func TestCodeFirst(t *testing.T) {
	got := CodeFirst([]string{".github/workflows/nightly.yml", "python/a/piecewise.py", "python/b/pynccl.py", "README.md", "python/test/x.py", "python/c/z.py"})
	want := []string{"python/a/piecewise.py", "python/b/pynccl.py", "python/c/z.py", ".github/workflows/nightly.yml", "README.md", "python/test/x.py"}
	if !slices.Equal(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

// A patch that could not be read now is unknown, not clean: a dirty tree
// before is no change to claim.
func TestComparePatchNotRead(t *testing.T) {
	was, now := state(), state()
	was.Git.PatchSHA256, was.Git.PatchBytes = "abcdef0123456789", 60
	now.Errors = append(now.Errors, "git patch: timed out after 10s")
	if got := Compare(was, now, Between{}); len(got) != 0 {
		t.Errorf("changes %+v", got)
	}
	if got := Compare(now, was, Between{}); len(got) != 0 {
		t.Errorf("reversed: %+v", got)
	}
}
