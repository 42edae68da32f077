package sim

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestBrokenCommitsFailToLaunch: at each broken commit of the history the
// server fails at start-up the way Python does on code that does not
// import — a traceback through the checkout's files ending in the
// exception, status 1, nothing bound — and serverlog calls it
// import-error; at the commit after it, which fixes it, the server starts.
func TestBrokenCommitsFailToLaunch(t *testing.T) {
	_, dir, rc := buildRepo(t, 0)
	if len(rc.Broken) != 3 {
		t.Fatalf("broken commits %v, want 3", rc.Broken)
	}
	for i, want := range []string{
		`SyntaxError: expected ':'`,
		`ImportError: cannot import name 'get_moe_impl_class' from 'sglang.srt.layers.moe.ep_moe.layer' \(` + regexp.QuoteMeta(filepath.Join(dir, epMoePath)) + `\)`,
		`ModuleNotFoundError: No module named 'sglang.srt.layers.quantization.fp8_kernel_fused'`,
	} {
		id := rc.Broken[i]
		git(t, dir, "checkout", "-q", id)
		log, code := runToExit(t, "", "--port", "0", "--repo", dir, "--time-scale", "50")
		if code != 1 {
			t.Errorf("%s: exit status %d, want 1:\n%s", id, code, log)
		}
		lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
		if lines[0] != "Traceback (most recent call last):" || !regexp.MustCompile("^"+want+"$").MatchString(lines[len(lines)-1]) {
			t.Errorf("%s: log, want a traceback ending in %s:\n%s", id, want, log)
		}
		// The last frame is the broken file, at the line that breaks.
		if !strings.Contains(log, `File "`+dir+"/python/sglang/") || strings.Contains(log, "server_args=") {
			t.Errorf("%s: the traceback does not go through the checkout, or start-up went on:\n%s", id, log)
		}
		if f := classify(t, log); f.Class != event.FailImport || f.Text != lines[len(lines)-1] {
			t.Errorf("%s: classified %+v, want import-error on the exception line", id, f)
		}
		// The next commit fixes it.
		next := rc.All[slices.Index(rc.All, id)+1]
		git(t, dir, "checkout", "-q", next)
		s := runInProc(t, "", nil, "--port", "0", "--repo", dir, "--time-scale", "50", "--startup-delay", "0.2", "--no-auto-load")
		waitReady(t, s)
		if resp, err := http.Get(s.url("/health")); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s (the fix): health %v %v", next, resp, err)
		}
		if code := s.stop(); code != 0 {
			t.Errorf("%s (the fix): exit %d:\n%s", next, code, s.out.String())
		}
	}
	// The baseline and origin/main launch; so does an edit that repairs
	// a broken checkout by hand, like real code.
	for _, id := range []string{rc.Baseline, rc.Latest} {
		git(t, dir, "checkout", "-q", id)
		if tb := importFailure(dir); tb != nil {
			t.Errorf("%s does not import:\n%s", id, strings.Join(tb, "\n"))
		}
	}
	git(t, dir, "checkout", "-q", rc.Broken[0])
	p := filepath.Join(dir, radixCachePath)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), radixEvictBad, "    def evict(self, num_tokens: int):\n", 1)), 0o644)
	if tb := importFailure(dir); tb != nil {
		t.Errorf("repaired by hand, still broken:\n%s", strings.Join(tb, "\n"))
	}
}
