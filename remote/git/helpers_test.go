package git

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
)

// gitEnv isolates the test's git commands from the user's configuration.
func gitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_TERMINAL_PROMPT=0")
}

// sh runs a git command in dir and returns its trimmed stdout.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

func write(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// binary is a file content git treats as binary (NUL bytes, not UTF-8).
func binary(seed byte) string {
	b := make([]byte, 3000)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return string(b)
}

// testRepo is a checkout with history: upstream (bare) holds c1 → c2 → c3,
// the checkout at dir is a clone on main reset to c1, so it is 2 behind.
// c2 changes model/pynccl.py and model/parallel_state.py; c3 README.md.
type testRepo struct {
	dir, upstream string
	c1, c2, c3    string
}

func newTestRepo(t testing.TB) testRepo {
	t.Helper()
	root := t.TempDir()
	up := filepath.Join(root, "upstream.git")
	work := filepath.Join(root, "seed")
	gitIn(t, root, "init", "-q", "--bare", "-b", "main", up)
	gitIn(t, root, "init", "-q", "-b", "main", work)
	write(t, work, "README.md", "# sglang\n")
	write(t, work, "model/pynccl.py", "def all_reduce(x):\n    return x\n")
	write(t, work, "model/parallel_state.py", "TP = 8\n")
	write(t, work, "weights.bin", binary(1))
	gitIn(t, work, "add", "-A")
	gitIn(t, work, "commit", "-q", "-m", "Initial")
	c1 := gitIn(t, work, "rev-parse", "HEAD")
	write(t, work, "model/pynccl.py", "def all_reduce(x):\n    sync()\n    return x\n")
	write(t, work, "model/parallel_state.py", "TP = 8\nPCG = True\n")
	gitIn(t, work, "commit", "-q", "-am", "Fix PCG MoE Error")
	c2 := gitIn(t, work, "rev-parse", "HEAD")
	write(t, work, "README.md", "# sglang\n\nfast\n")
	gitIn(t, work, "commit", "-q", "-am", "Docs")
	c3 := gitIn(t, work, "rev-parse", "HEAD")
	gitIn(t, work, "push", "-q", up, "main")
	dir := filepath.Join(root, "sglang")
	gitIn(t, root, "clone", "-q", up, dir)
	gitIn(t, dir, "config", "user.name", "Engineer")
	gitIn(t, dir, "config", "user.email", "eng@example.com")
	gitIn(t, dir, "reset", "-q", "--hard", c1)
	return testRepo{dir: dir, upstream: up, c1: c1, c2: c2, c3: c3}
}

// hostCase is a Host the tests run against: local, and over a real sshd.
type hostCase struct {
	name string
	host func(t *testing.T) remote.Host
}

func hostCases() []hostCase {
	return []hostCase{
		{"local", func(t *testing.T) remote.Host { return remote.NewLocal() }},
		{"sshd", sshHost},
	}
}

// sshHost starts a real OpenSSH sshd on loopback and connects to it.
func sshHost(t *testing.T) remote.Host {
	t.Helper()
	srv := sshdtest.Start(t, sshdtest.Options{Env: map[string]string{
		"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
	}})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile:      os.DevNull,
		IdentityFiles:   []string{srv.ClientKeyPath()},
		KnownHostsFiles: []string{known},
		NoAgent:         true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, h remote.Host, dir string) *Repo {
	t.Helper()
	r, err := Open(ctxT(t), h, dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// treeState is every byte a user could lose: each worktree file (path →
// content, mode), the index (ls-files -s), HEAD and the branch.
type treeState struct {
	files  map[string]string
	index  string
	head   string
	branch string
}

func readState(t testing.TB, dir string) treeState {
	t.Helper()
	s := treeState{files: map[string]string{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s.files[rel] = info.Mode().String() + "\n" + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.index = gitIn(t, dir, "ls-files", "-s")
	s.head = gitIn(t, dir, "rev-parse", "HEAD")
	cmd := exec.Command("git", "symbolic-ref", "-q", "HEAD")
	cmd.Dir = dir
	out, _ := cmd.Output()
	s.branch = strings.TrimSpace(string(out))
	return s
}

func (s treeState) diff(o treeState) []string {
	var d []string
	if s.head != o.head {
		d = append(d, "HEAD "+s.head+" != "+o.head)
	}
	if s.branch != o.branch {
		d = append(d, "branch "+s.branch+" != "+o.branch)
	}
	if s.index != o.index {
		d = append(d, "index:\n"+s.index+"\n!=\n"+o.index)
	}
	var names []string
	for n := range s.files {
		names = append(names, n)
	}
	for n := range o.files {
		if _, ok := s.files[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if s.files[n] != o.files[n] {
			d = append(d, "file "+n+" differs")
		}
	}
	return d
}

// dirty makes the checkout dirty in every way: a modified file, a staged
// change plus a further unstaged one, a staged new file, an untracked file
// in a new directory, a modified binary file and an untracked binary file.
func dirty(t testing.TB, dir string) {
	t.Helper()
	write(t, dir, "README.md", "# sglang\n\nlocal notes\n")
	write(t, dir, "model/parallel_state.py", "TP = 4\n")
	gitIn(t, dir, "add", "model/parallel_state.py")
	write(t, dir, "model/parallel_state.py", "TP = 4\nDEBUG = 1\n")
	write(t, dir, "model/new_kernel.py", "def k(): pass\n")
	gitIn(t, dir, "add", "model/new_kernel.py")
	write(t, dir, "scratch/bench notes ü.txt", "89 tok/s with LL\n")
	write(t, dir, "weights.bin", binary(2))
	write(t, dir, "scratch/profile.bin", binary(3))
}

// execGit runs git in dir and returns its error (for commands expected to fail).
func execGit(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	return cmd.Run()
}
