package repo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2025-10-22T10:00:00Z", "GIT_COMMITTER_DATE=2025-10-22T10:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a real repository whose path has a space and a quote, to
// prove the command line is quoted.
func newRepo(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "sg lang's repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "pynccl.py"), []byte("a\n"), 0o644)
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "Fix PCG MoE Error")
	return dir
}

func TestReadRealRepository(t *testing.T) {
	dir := newRepo(t)
	host := remote.NewLocal()
	defer host.Close()
	ctx := context.Background()

	h, err := Read(ctx, host, dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.Commit != git(t, dir, "rev-parse", "HEAD") || h.Short != git(t, dir, "rev-parse", "--short", "HEAD") {
		t.Errorf("commit %s/%s", h.Commit, h.Short)
	}
	if h.Subject != "Fix PCG MoE Error" || h.Branch != "main" || h.Dirty != 0 {
		t.Errorf("got %+v", h)
	}
	if !h.CommitTime.Equal(time.Date(2025, 10, 22, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("commit time %v", h.CommitTime)
	}

	// Dirty: one modified, one untracked with a space, one rename.
	os.WriteFile(filepath.Join(dir, "pynccl.py"), []byte("b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "new file.py"), []byte("x\n"), 0o644)
	git(t, dir, "checkout", "-q", "--detach")
	h, err = Read(ctx, host, dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.Branch != "" || h.Dirty != 2 {
		t.Errorf("detached dirty: got branch %q dirty %d, want \"\" and 2", h.Branch, h.Dirty)
	}
	// A staged rename is one entry followed by its source path.
	git(t, dir, "checkout", "-q", "--", "pynccl.py")
	os.Remove(filepath.Join(dir, "new file.py"))
	git(t, dir, "mv", "pynccl.py", "renamed.py")
	if h, err = Read(ctx, host, dir); err != nil || h.Dirty != 1 {
		t.Errorf("with rename: dirty %d err %v, want 1", h.Dirty, err)
	}
}

func TestReadNotARepository(t *testing.T) {
	host := remote.NewLocal()
	defer host.Close()
	_, err := Read(context.Background(), host, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("err = %v, want git's 'not a git repository'", err)
	}
}

func TestWatcherEmitsOnChangeOnly(t *testing.T) {
	dir := newRepo(t)
	host := remote.NewLocal()
	defer host.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan event.Event, 16)
	w := &Watcher{Host: host, Path: dir, Interval: 20 * time.Millisecond}
	go w.Run(ctx, func(e event.Event) { got <- e })

	first := (<-got).Data.(event.RepoHead)
	os.WriteFile(filepath.Join(dir, "pynccl.py"), []byte("changed\n"), 0o644)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-got:
			h := e.Data.(event.RepoHead)
			if h.Same(first) {
				t.Fatalf("emitted an unchanged head %+v", h)
			}
			if h.Dirty != 1 {
				t.Fatalf("dirty = %d, want 1", h.Dirty)
			}
			return
		case <-deadline:
			t.Fatal("no event after the working tree changed")
		}
	}
}

// downHost fails every command as a dropped connection does.
type downHost struct{ remote.Host }

func (downHost) Run(context.Context, string, io.Reader) (remote.Result, error) {
	return remote.Result{}, fmt.Errorf("remote: gpu-box: %w: still reconnecting", remote.ErrDisconnected)
}

func TestWatcherKeepsHeadWhileDisconnected(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var got []event.Event
	(&Watcher{Host: downHost{}, Path: "/x", Interval: 10 * time.Millisecond}).Run(ctx, func(e event.Event) { got = append(got, e) })
	if len(got) != 0 {
		t.Fatalf("emitted %v while the host was unreachable, want nothing", got[0].Data)
	}
}
