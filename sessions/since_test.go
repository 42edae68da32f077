package sessions

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/hostdiff"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// sinceRig opens sessions on one host and checkout, each recording into
// dir (or the file j), and runs RecordSinceLast in them.
type sinceRig struct {
	t          *testing.T
	ctx        context.Context
	host       remote.Host
	name, repo string
	logs       string
}

// session opens a session (journal file j, else a new one in dir),
// records what changed since the last one, closes it and returns its
// host-state, its host-changes and its journal's path.
func (r sinceRig) session(dir, j string, o SinceOptions) (event.HostState, event.HostChanges, string) {
	t := r.t
	t.Helper()
	s, err := Open(Options{Name: "since", Config: config.Builtins(), Journal: JournalOptions{Dir: dir, File: j}, Header: event.SessionHeader{Host: r.name}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var states []event.HostState
	var changes []event.HostChanges
	s.OnEvent(func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch p := e.Data.(type) {
		case event.HostState:
			states = append(states, p)
		case event.HostChanges:
			changes = append(changes, p)
		}
	})
	if err := s.Attach(r.ctx, AttachOptions{Host: r.host, Target: config.Host{LogDir: r.logs, Preset: "sglang"}, Repo: r.repo, NoProcessMatch: true}); err != nil {
		t.Fatal(err)
	}
	s.RecordSinceLast(r.ctx, o)
	path := s.JournalPath()
	if err := s.Close(r.ctx, nil); err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 || len(changes) != 1 {
		t.Fatalf("%d host-states, %d host-changes published", len(states), len(changes))
	}
	return states[0], changes[0], path
}

// kindsIn lists the kinds of the journal at path, in order.
func kindsIn(t *testing.T, path string) []string {
	t.Helper()
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var out []string
	_ = j.Scan(func(e event.Event) error { out = append(out, e.Data.Kind().String()); return nil })
	return out
}

// TestSinceLastOnSimHost, over the simulated host's real SSH: session 1
// finds the host never seen and records its state; after a `git pull` on
// the host, session 2 names the pull, its commits and files; session 3,
// with nothing done in between, says nothing changed.
func TestSinceLastOnSimHost(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no mirror of this machine's user is read
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, host := simHost(t, ctx)
	rig := sinceRig{t: t, ctx: ctx, host: host, name: "simulated host", repo: h.RepoPath, logs: t.TempDir()}
	dir := t.TempDir()

	st1, hc1, j1 := rig.session(dir, "", SinceOptions{Dir: dir})
	if hc1.Seen || len(hc1.Changes) != 0 || hc1.Host != "simulated host" || hc1.Repo != h.RepoPath {
		t.Errorf("first session: %+v", hc1)
	}
	if got := hostdiff.Headline(hc1, time.Now(), 2); got != "first session on this host" {
		t.Errorf("first headline %q", got)
	}
	fp := st1.Fingerprint
	if fp.Git == nil || fp.Git.Head != h.Commits.Baseline || fp.Kernel == "" || len(fp.Versions) == 0 || fp.Versions[0].Value == "" {
		t.Errorf("state %+v", fp)
	}
	if k := kindsIn(t, j1); !slices.Contains(k, "host-state") || !slices.Contains(k, "host-changes") {
		t.Errorf("journal 1 holds %v", k)
	}

	run(t, h.RepoPath, "git", "pull", "-q", "--ff-only")
	n, _ := strconv.Atoi(strings.TrimSpace(run(t, h.RepoPath, "git", "rev-list", "--count", h.Commits.Baseline+"..HEAD")))
	head := strings.TrimSpace(run(t, h.RepoPath, "git", "rev-parse", "HEAD"))
	if n < 2 {
		t.Fatalf("the pull brought %d commits", n)
	}
	_, hc2, _ := rig.session(dir, "", SinceOptions{Dir: dir})
	if !hc2.Seen || hc2.Journal != j1 || hc2.Mirror || !hc2.Since.Equal(fp.At) || len(hc2.Changes) != 1 {
		t.Fatalf("second session: %+v", hc2)
	}
	ch := hc2.Changes[0]
	if ch.Name != "HEAD" || ch.Was != h.Commits.Baseline || ch.Now != head || !slices.Equal(ch.How, []string{"pull"}) ||
		ch.Range == nil || ch.Range.AheadTotal != n || !slices.Contains(ch.Range.Files, sim.PyncclPath) {
		t.Errorf("HEAD change %+v (range %+v)", ch, ch.Range)
	}
	want := "HEAD " + git.ShortID(h.Commits.Baseline) + " -> " + git.ShortID(head) + " by git pull, " + strconv.Itoa(n) + " commits, touches "
	if got := hostdiff.Headline(hc2, time.Now(), 3); !strings.Contains(got, want) || !strings.Contains(got, "pynccl.py") {
		t.Errorf("headline %q, want %q… pynccl.py", got, want)
	}

	_, hc3, j3 := rig.session(dir, "", SinceOptions{Dir: dir})
	if !hc3.Seen || len(hc3.Changes) != 0 || len(hc3.Errs) != 0 {
		t.Errorf("third session: %+v", hc3)
	}
	if got := hostdiff.Headline(hc3, time.Now(), 3); !strings.HasPrefix(got, "nothing changed since your last session here (") {
		t.Errorf("third headline %q", got)
	}

	// Appending to its own journal, a session compares with what the
	// earlier session wrote there, not with itself.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(h.RepoPath, "notes.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, h.RepoPath, "git", "add", "notes.txt")
	_, hc4, _ := rig.session(other, j3, SinceOptions{Dir: other})
	if !hc4.Seen || hc4.Journal != j3 || len(hc4.Changes) != 1 || hc4.Changes[0].Name != "patch" || hc4.Changes[0].Now != "1 file, +1 -0" {
		t.Errorf("appending session: %+v", hc4)
	}
}

// TestSinceLastFromMirror: with no local journal for the host, the
// newest mirror on the host (a cockpit that ran elsewhere) is the last
// session; another host's or another checkout's state is not "here".
func TestSinceLastFromMirror(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	repo := filepath.Join(root, "sglang")
	rc, err := sim.BuildRepo(ctx, filepath.Join(root, "upstream.git"), repo, 0)
	if err != nil {
		t.Fatal(err)
	}
	rig := sinceRig{t: t, ctx: ctx, host: remote.NewLocal(), name: "local", repo: repo, logs: t.TempDir()}
	laptop := t.TempDir()
	_, _, j1 := rig.session(laptop, "", SinceOptions{Dir: laptop, NoMirror: true})
	mirrors := filepath.Join(home, MirrorDir)
	if err := os.MkdirAll(mirrors, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(j1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mirrors, filepath.Base(j1)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A newer mirror of another checkout: not this one's last session.
	otherRepo := sinceRig{t: t, ctx: ctx, host: remote.NewLocal(), name: "local", repo: t.TempDir(), logs: rig.logs}
	_, _, j2 := otherRepo.session(laptop, "", SinceOptions{Dir: laptop, NoMirror: true})
	b2, _ := os.ReadFile(j2)
	if err := os.WriteFile(filepath.Join(mirrors, "zz-newer.jsonl"), b2, 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	_ = os.Chtimes(filepath.Join(mirrors, "zz-newer.jsonl"), later, later)

	run(t, repo, "git", "pull", "-q", "--ff-only")
	desk := t.TempDir() // this machine's journals: none for the host
	_, hc, _ := rig.session(desk, "", SinceOptions{Dir: desk})
	if !hc.Seen || !hc.Mirror || hc.Journal != "~/"+MirrorDir+"/"+filepath.Base(j1) || len(hc.Changes) != 1 || hc.Changes[0].Was != rc.Baseline {
		t.Fatalf("from the mirror: %+v", hc)
	}
	if l := hostdiff.Lines(hc, time.Now()); !strings.Contains(l[1], "the host's mirror ~/"+MirrorDir) {
		t.Errorf("lines %q", l)
	}
	// NoMirror: never seen.
	_, hc, _ = rig.session(t.TempDir(), "", SinceOptions{Dir: t.TempDir(), NoMirror: true})
	if hc.Seen {
		t.Errorf("without the mirror: %+v", hc)
	}
}
