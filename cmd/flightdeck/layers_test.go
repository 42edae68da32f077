package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The module's layout (docs/architecture.md): five rooms, whose imports
// point one way, cmd → tui → sessions → probes → remote, with the event
// vocabulary (sessions/event) the one package every room may import.
const module = "github.com/flightdeck-dev/flightdeck"

// roomOrder ranks the rooms: a package may import its own room and the
// rooms ranked below it.
var roomOrder = map[string]int{"remote": 0, "probes": 1, "sessions": 2, "tui": 3, "cmd": 4}

// vocabulary is imported by every room: the payload types and the kind
// table. It imports only the standard library.
const vocabulary = module + "/sessions/event"

// testHarnesses are imported only by tests.
var testHarnesses = []string{module + "/remote/sshdtest", module + "/remote/sim/simtest", module + "/sessions/event/eventtest", module + "/tui/tuitest", module + "/sessions/ledger/ledgertest", module + "/sessions/journal/journaltest"}

// goPackage is one package of `go list`.
type goPackage struct {
	path    string
	imports []string // non-test imports
	std     bool
	tests   []string // imports of its _test files, both packages
}

func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{.Standard}}|{{join .Imports \" \"}}|{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 {
			t.Fatalf("go list printed %q", line)
		}
		pkgs = append(pkgs, goPackage{path: f[0], std: f[1] == "true", imports: strings.Fields(f[2]), tests: strings.Fields(f[3])})
	}
	return pkgs
}

// room is the top-level folder of a module package, "" for another
// module's or the standard library's.
func room(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return ""
	}
	r, _, _ := strings.Cut(rest, "/")
	return r
}

// TestImportsPointOneWay: no package imports a room ranked above its own
// (only the vocabulary is shared); the vocabulary imports only the
// standard library; the test harnesses are imported only by tests.
func TestImportsPointOneWay(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		from := room(p.path)
		if _, ok := roomOrder[from]; !ok {
			t.Errorf("%s is outside the five rooms (cmd, tui, sessions, probes, remote)", p.path)
			continue
		}
		for _, imp := range p.imports {
			if p.path == vocabulary && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				t.Errorf("%s imports %s: the vocabulary imports only the standard library", p.path, imp)
			}
			if slices.Contains(testHarnesses, imp) && !slices.Contains(testHarnesses, p.path) { // a harness may build on another
				t.Errorf("%s imports the test harness %s outside its tests", p.path, imp)
			}
			to := room(imp)
			if to == "" || imp == vocabulary {
				continue
			}
			if roomOrder[to] > roomOrder[from] {
				t.Errorf("%s imports %s: %s is above %s (cmd → tui → sessions → probes → remote)", p.path, imp, to, from)
			}
		}
	}
}

// TestTopLevelIsFiveRooms: the repository's top level holds the five rooms
// and the project's own files, nothing else.
func TestTopLevelIsFiveRooms(t *testing.T) {
	cmd := exec.Command("git", "ls-files")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	allowed := []string{"cmd", "tui", "remote", "probes", "sessions", "docs", "scripts", ".ci",
		"go.mod", "go.sum", "README.md", "Makefile", ".gitignore"}
	seen := map[string]bool{}
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		top, _, _ := strings.Cut(f, "/")
		if !seen[top] && !slices.Contains(allowed, top) {
			t.Errorf("top-level %s is outside the layout (%s)", top, strings.Join(allowed, ", "))
		}
		seen[top] = true
	}
}
