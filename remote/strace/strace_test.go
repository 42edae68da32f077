package strace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// want is a process as the tests expect it.
type want struct {
	pid, parent int
	argv        string // ArgvLine of the last exec; "" for a fork that did not exec
	execs       int
	exit        string
}

func got(t *Trace) []want {
	var out []want
	for _, p := range t.Processes() {
		w := want{pid: p.PID, parent: p.Parent, execs: len(p.Execs), exit: p.Exit}
		if p.Argv() != nil {
			w.argv = ArgvLine(p.Argv(), p.Execs[len(p.Execs)-1].Truncated)
		}
		out = append(out, w)
	}
	return out
}

// TestParseRealTree reads strace 6.1's output of testdata/tree.sh (the
// command line is in the file's first line; captured with Args on Debian
// 12): vfork and execve split across lines, failed execve of a PATH
// search, subshells that never exec, exec in place (sh → env → dd, one
// process), a thread (clone3 CLONE_THREAD) that forks, a kill, a non-zero
// exit and escapes in argv.
func TestParseRealTree(t *testing.T) {
	tr, err := ParseFile("testdata/tree.strace")
	if err != nil {
		t.Fatal(err)
	}
	wantProcs := []want{
		{16500, 0, "./fixture.sh", 1, "exited with 0"},
		{16501, 16500, "git --version", 1, "exited with 0"},
		{16502, 16500, "", 0, "exited with 0"}, // $(echo sub | cat)
		{16503, 16502, "", 0, "exited with 0"}, // echo sub: a builtin in a fork
		{16504, 16502, "cat", 1, "exited with 0"},
		{16505, 16500, "dd if=/dev/zero bs=1 count=4", 3, "exited with 0"},
		{16506, 16500, "", 0, "killed by SIGKILL"}, // sleep 5 &, killed before its exec
		{16507, 16500, "sh -c 'exit 7'", 1, "exited with 7"},
		{16508, 16500, `/usr/bin/python3 -c 'import threading,subprocess; t=threading.Thread(target=lambda: subprocess.run(["/bin/true"])); t.start(); t.join()'`, 1, "exited with 0"},
		{16510, 16508, "/bin/true", 1, "exited with 0"}, // forked by the thread 16509
		{16511, 16500, "", 0, "exited with 0"},
		{16512, 16511, "sh -c 'sleep 0.2'", 2, "exited with 0"},
		{16513, 16500, "", 0, "exited with 0"},
		{16514, 16512, "sleep 0.2", 1, "exited with 0"},
		{16515, 16500, `/bin/echo "a\"b\\c\nd" "\x01\xe9"`, 1, "exited with 0"},
		{16516, 16500, "sleep 0.3", 1, "exited with 0"},
	}
	if g := got(tr); !reflect.DeepEqual(g, wantProcs) {
		t.Fatalf("processes:\n got %+v\nwant %+v", g, wantProcs)
	}
	// The escapes are decoded: argv holds the bytes the program got.
	echo := tr.Processes()[14]
	if a := echo.Argv(); len(a) != 3 || a[1] != "a\"b\\c\nd" || a[2] != "\x01\xe9" {
		t.Errorf("echo's argv = %q", a)
	}
	// Start is the earliest sighting: git's own execve line comes before
	// its parent's vfork returns.
	gitP := tr.Processes()[1]
	if want := time.Unix(1796323141, 626439000); !gitP.Start.Equal(want) {
		t.Errorf("git started %v, want %v", gitP.Start, want)
	}
	if e := gitP.Execs[0]; e.Path != "/usr/bin/git" || e.Truncated {
		t.Errorf("git's exec = %+v", e)
	}

	// A window: from git's start up to (not including) the dd shell's.
	from, to := gitP.Start, tr.Processes()[5].Start
	var pids []int
	for _, p := range tr.Started(from, to) {
		pids = append(pids, p.PID)
	}
	if !reflect.DeepEqual(pids, []int{16501, 16502, 16503, 16504}) {
		t.Errorf("started in [%v, %v) = %v", from, to, pids)
	}
	// In the window, git and the $(...) subshell are roots (the script
	// was there before); cat and the builtin's fork belong to the subshell.
	roots := Roots(tr.Started(from, to), tr)
	if len(roots) != 2 || roots[0] != (Root{"(fork, no exec)", 1, 3}) || roots[1] != (Root{"git --version", 1, 1}) {
		t.Errorf("roots in the window = %+v", roots)
	}
	var below []int
	for _, p := range tr.Descendants(16511) {
		below = append(below, p.PID)
	}
	if !reflect.DeepEqual(below, []int{16512, 16514}) {
		t.Errorf("descendants of 16511 = %v", below)
	}

	sum := Summary(tr.Started(time.Time{}, time.Time{}), tr)
	for _, line := range []string{
		"16 processes started:",
		"    5  (fork, no exec) of fixture.sh", // 16503's parent is a subshell of fixture.sh
		"    2  /usr/bin/sleep",
		"            2  sleep N.N", // one shape
		"               e.g. sleep 0.2",
		"    1  /usr/bin/dd",
		"            1  dd if=/dev/zero bs=N count=N   (exec'd by sh -c 'exec env LC_ALL=C dd if=/dev/zero bs=N count=N N>/dev/null')",
		"               e.g. dd if=/dev/zero bs=1 count=4   (exec'd by sh -c 'exec env LC_ALL=C dd if=/dev/zero bs=1 count=4 2>/dev/null')",
		"by the command each tree of them started from (its first process's first command line):",
		"    1 trees,   16 processes  ./fixture.sh",
	} {
		if !strings.Contains(sum+"\n", line+"\n") {
			t.Errorf("summary lacks %q:\n%s", line, sum)
		}
	}
}

// TestParseSplitsAndEdges covers what the real capture does not: a clone
// split with its flags in the first part, a thread whose own line comes
// before its clone returns, a pid reused after its process exited, a
// clone that must be restarted, argv cut by -s, a partial last line, and
// calls resumed whose start the trace never saw.
func TestParseSplitsAndEdges(t *testing.T) {
	in := strings.Join([]string{
		`100 10.000001 <... wait4 resumed>, NULL, 0, NULL) = 7`,
		`100 10.000002 <... execve resumed>) = 0`,
		`100 10.000010 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLD <unfinished ...>`,
		`101 10.000011 execve("/bin/a", ["a", "x"...], 0x1 /* 2 vars */) = 0`,
		`100 10.000012 <... clone resumed>) = 101`,
		`102 10.000020 vfork( <unfinished ...>`, // thread 102 of 100, seen before its clone returned
		`100 10.000021 clone3({flags=CLONE_VM|CLONE_THREAD|CLONE_SIGHAND, exit_signal=0, stack=0x1, stack_size=0x2}, 88) = 102`,
		`103 10.000022 execve("/bin/b", ["b", "1", "2", ...], 0x1 /* 2 vars */) = 0`,
		`102 10.000023 <... vfork resumed>) = 103`,
		`101 10.000030 +++ exited with 0 +++`,
		`100 10.000040 fork() = ? ERESTARTNOINTR (To be restarted)`,
		`100 10.000041 fork() = 101`, // 101 reused
		`101 10.000042 execve("/bin/c", ["c"], 0x1 /* 2 vars */) = -1 ENOENT (No such file or directory)`,
		`101 10.000043 execve("/usr/bin/c", ["c"], 0x1 /* 2 vars */) = 0`,
		`101 10.000050 +++ killed by SIGSEGV (core dumped) +++`,
		`100 10.000055 fork( <unfinished ...>`,
		`104 10.000056 +++ exited with 0 +++`, // a subshell that ended before its fork returned
		`100 10.000057 <... fork resumed>) = 104`,
		`100 10.000060 execve("/bin/d", ["d"], 0x1 /* 2 v`, // still being written
	}, "\n")
	tr, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	wantProcs := []want{
		{100, 0, "", 0, ""},
		{101, 100, "a x [truncated]", 1, "exited with 0"},
		{103, 100, "b 1 2 [truncated]", 1, ""},
		{101, 100, "c", 1, "killed by SIGSEGV (core dumped)"},
		{104, 100, "", 0, "exited with 0"},
	}
	if g := got(tr); !reflect.DeepEqual(g, wantProcs) {
		t.Fatalf("processes:\n got %+v\nwant %+v", g, wantProcs)
	}
	if n := len(tr.Started(time.Unix(10, 11000), time.Unix(10, 41000))); n != 2 {
		t.Errorf("started in [10.000011, 10.000041) = %d, want 2 (101 and 103)", n)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"execve(\"/bin/a\", [\"a\"], 0x1) = 0\n",     // no pid: not -f
		"100 execve(\"/bin/a\", [\"a\"], 0x1) = 0\n", // no time: not -ttt
		"100 10:00:01.000001 vfork() = 101\n",        // -tt, not -ttt
		"100 10.000001 <... execve\n",                // not a resumed line
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("Parse(%q) err = %v, want an error naming line 1", in, err)
		}
	}
}

// TestTraceRealCommand runs strace with Command on a shell that starts
// three processes (one a subshell), and counts them; strace must be
// installed (.ci/run installs it), else the test is skipped, or fails
// when $CI is set.
func TestTraceRealCommand(t *testing.T) {
	st := needStrace(t)
	out := filepath.Join(t.TempDir(), "trace")
	argv := Command(st, out, "/bin/sh", "-c", `/bin/true; x=$(echo hi); exec /bin/echo "$x" two`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := time.Now()
	b, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil || string(b) != "hi two\n" {
		t.Fatalf("%v: %v, output %q", argv, err, b)
	}
	tr, err := ParseFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ps := tr.Started(before, time.Now())
	var lines []string
	for _, p := range ps {
		lines = append(lines, ArgvLine(p.Argv(), false))
	}
	// sh (which then execs echo), true, the $(...) subshell.
	want := []string{"/bin/echo hi two", "/bin/true", ""}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("started %q, want %q\n%s", lines, want, Summary(ps, tr))
	}
	if e := ps[0].Execs; len(e) != 2 || e[0].Path != "/bin/sh" {
		t.Errorf("the shell's execs = %+v, want sh then echo", e)
	}
}

func needStrace(t *testing.T) string {
	t.Helper()
	p, err := Path()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v (CI is set, so this is a failure)", err)
		}
		t.Skip(err)
	}
	return p
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/tree.strace", "testdata/goexec.strace"} {
		real, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(real))
	}
	f.Add("1 1.000001 execve(\"/a\\x41\\101\", [\"a\", ...], 0x1) = 0\n")
	f.Add("1 1.1 clone3({flags=CLONE_THREAD} <unfinished ...>\n1 1.2 <... clone3 resumed> => {parent_tid=[2]}, 88) = 2\n")
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		ps := tr.Started(time.Time{}, time.Time{})
		if len(ps) != len(tr.Processes()) {
			t.Fatalf("an unbounded window holds %d of %d processes", len(ps), len(tr.Processes()))
		}
		for _, p := range ps {
			if p.PID <= 0 {
				t.Fatalf("pid %d", p.PID)
			}
			tr.Descendants(p.PID)
		}
		_ = Summary(ps, tr)
	})
}

func TestShape(t *testing.T) {
	for in, want := range map[string]string{
		"dd if=/tmp/sim-12/log bs=1 skip=15446 count=256":         "dd if=/tmp/sim-N/log bs=N skip=N count=N",
		"cat /proc/1/stat /proc/10/stat /proc/1027/stat":          "cat /proc/N/stat ...",
		"grep -l x /proc/1/cmdline /proc/2/cmdline -- /proc/3/fd": "grep -l x /proc/N/cmdline ... -- /proc/N/fd",
		"printf '%s  %s'": "printf '%s  %s'",
	} {
		if got := Shape(in); got != want {
			t.Errorf("Shape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseRealGoProgram reads strace 6.1's output of
// testdata/goexec.go.txt (built with go1.26.8, CGO_ENABLED=0): Go's
// threads (clone with CLONE_THREAD, some created by other threads) are not
// processes; os/exec's children (CLONE_VM|CLONE_PIDFD|CLONE_VFORK, split
// across lines, forked by any thread) belong to the program, as does the
// runtime's CLONE_PIDFD probe, a real fork that exits at once.
func TestParseRealGoProgram(t *testing.T) {
	tr, err := ParseFile("testdata/goexec.strace")
	if err != nil {
		t.Fatal(err)
	}
	wantProcs := []want{
		{28862, 0, "./goexec", 1, "exited with 0"},
		{28871, 28862, "", 0, "exited with 0"}, // the pidfd probe
		{28874, 28862, "/bin/true", 1, "exited with 0"},
		{28872, 28862, "/bin/true", 1, "exited with 0"},
		{28882, 28862, "/bin/true", 1, "exited with 0"}, // forked by a thread a thread made
		{28883, 28862, "/bin/sh -c '/bin/true; exit 2'", 1, "exited with 2"},
		{28884, 28883, "/bin/true", 1, "exited with 0"},
	}
	if g := got(tr); !reflect.DeepEqual(g, wantProcs) {
		t.Fatalf("processes:\n got %+v\nwant %+v", g, wantProcs)
	}
}
