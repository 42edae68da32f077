package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// captureInput is what a fingerprint takes from the stream at the start.
type captureInput struct {
	exp    string
	at     time.Time
	launch *event.LaunchInfo // redacted; nil when none is known
	preset string
	// prev is the previous experiment's capture, whose HEAD the range
	// starts from; nil for the first experiment.
	prev *captureSlot
	// noGPUs leaves the GPUs out: no sample will come (a CLI session
	// runs no probes), so none is waited for.
	noGPUs bool
}

// captureSlot is one experiment's fingerprint capture as the next one
// sees it: head is set before done is closed.
type captureSlot struct {
	done chan struct{}
	head string // the captured HEAD (full id); "" when unknown
}

// unameCmd reads the host's name and kernel release in one command (fixed
// text: nothing in it comes from outside).
const unameCmd = "uname -n; uname -r"

// probeScript runs a version probe ($2) with sh -c under coreutils timeout
// ($1 seconds, then SIGKILL a second later) when the host has it, so a
// hung probe does not outlive its deadline on the host either. Fixed text
// on one line (remote.Quote refuses newlines); the probe travels as an
// argument.
const probeScript = `if command -v timeout >/dev/null 2>&1; then exec timeout -k 1 "$1" sh -c "$2"; else exec sh -c "$2"; fi`

// MaxUntracked is the most untracked paths a fingerprint lists (the count
// of the rest goes to Errors).
const MaxUntracked = 1000

// maxVersionRunes caps a version value or error.
const maxVersionRunes = 200

func (l *Lab) probeTimeout() time.Duration {
	if l.ProbeTimeout > 0 {
		return l.ProbeTimeout
	}
	return DefaultProbeTimeout
}

// capture takes an experiment's fingerprint: hostname and kernel, the git
// checkout, the version probes of the preset, all at once, each with its
// own deadline; the launch and GPUs come from the stream. Every part that
// fails goes to Errors.
func (l *Lab) capture(ctx context.Context, in captureInput) event.Fingerprint {
	fp := event.Fingerprint{At: time.Now(), Launch: in.launch}
	if in.launch != nil {
		fp.CommandLine = server.CommandLine(*in.launch)
	}
	if l.Host == nil {
		fp.Errors = []string{"no host to read the fingerprint from"}
		return fp
	}
	timeout := l.probeTimeout()
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		mu.Lock()
		fp.Errors = append(fp.Errors, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		host, kernel, err := l.uname(ctx, timeout)
		if err != nil {
			fail("hostname and kernel: %s", errWords(err, timeout))
			return
		}
		mu.Lock()
		fp.Hostname, fp.Kernel = host, kernel
		mu.Unlock()
	})
	if l.RepoPath != "" {
		wg.Go(func() {
			gs, errs := l.gitState(ctx, 3*timeout, in.prev)
			mu.Lock()
			fp.Git = gs
			fp.Errors = append(fp.Errors, errs...)
			mu.Unlock()
		})
	}
	cfg := l.Config
	if cfg == nil {
		cfg = config.Builtins()
	}
	// The GPUs as the experiment starts: the first sample taken at or
	// after its start, while the probes run. The last sample before it
	// may be the killed server's (a relaunch) or none at all (the demo
	// launches at once).
	wg.Go(func() {
		if in.noGPUs {
			return
		}
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		for {
			g, next := l.gpusSince(in.at)
			if next == nil {
				mu.Lock()
				fp.GPUs = g
				mu.Unlock()
				return
			}
			select {
			case <-next:
			case <-deadline.C:
				if g := l.lastGPUs(); len(g) > 0 {
					mu.Lock()
					fp.GPUs = g
					mu.Unlock()
					fail("gpus: no GPU sample within %v of the start: the last one before it is kept", timeout)
				} else {
					fail("gpus: no GPU sample within %v", timeout)
				}
				return
			case <-ctx.Done():
				return
			}
		}
	})
	probes := cfg.VersionProbes(in.preset)
	fp.Versions = make([]event.Version, len(probes))
	for i, p := range probes {
		wg.Go(func() { fp.Versions[i] = l.probe(ctx, p, timeout) })
	}
	wg.Wait()
	slices.Sort(fp.Errors)
	return fp
}

// uname reads the host's name and kernel release.
func (l *Lab) uname(ctx context.Context, timeout time.Duration) (host, kernel string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := l.Host.Run(ctx, unameCmd, nil)
	if err != nil {
		return "", "", withStderr(err, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("unexpected output %q", sanitize.Line(res.Stdout))
	}
	return sanitize.String(strings.TrimSpace(lines[0])), sanitize.String(strings.TrimSpace(lines[1])), nil
}

// gitState reads the checkout: HEAD, branch, subject, untracked files and
// stashes (git.Repo.Status), the patch against HEAD (git.Repo.Patch), and,
// when the previous experiment's capture (prev) knew another HEAD, the
// range between the two (git.Repo.Range), all within timeout. A range that
// cannot be read is recorded with its Err; it never fails the rest.
func (l *Lab) gitState(ctx context.Context, timeout time.Duration, prev *captureSlot) (*event.GitState, []string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	gs := &event.GitState{Repo: l.RepoPath}
	r, err := l.openRepo(ctx)
	if err != nil {
		return gs, []string{"git: " + errWords(err, timeout)}
	}
	gs.Repo = r.Path
	var (
		st           event.GitStatus
		patch        git.Patch
		stErr, ptErr error
		wg           sync.WaitGroup
	)
	wg.Go(func() {
		if st, stErr = r.Status(ctx, 1); stErr == nil {
			gs.Range = rangeSince(ctx, r, prev, sanitize.String(st.Head.ID), timeout)
		}
	})
	wg.Go(func() { patch, ptErr = r.Patch(ctx, ledger.MaxPatch) })
	wg.Wait()
	var errs []string
	if stErr != nil {
		errs = append(errs, "git: "+errWords(stErr, timeout))
	} else {
		gs.Head, gs.Branch, gs.Subject = sanitize.String(st.Head.ID), sanitize.String(st.Branch), sanitize.String(st.Head.Subject)
		n := 0
		for _, f := range st.Files {
			if !f.Untracked() {
				continue
			}
			if n++; n <= MaxUntracked {
				gs.Untracked = append(gs.Untracked, sanitize.String(f.Path))
			}
		}
		if n > MaxUntracked {
			errs = append(errs, fmt.Sprintf("git: %d untracked files, the first %d listed", n, MaxUntracked))
		}
		for _, s := range st.Stashes {
			gs.Stashes = append(gs.Stashes, s.Ref()+": "+sanitize.String(s.Message))
		}
	}
	if ptErr != nil {
		errs = append(errs, "git patch: "+errWords(ptErr, timeout))
	} else if patch.Bytes > 0 {
		gs.Patch, gs.PatchSHA256, gs.PatchBytes, gs.PatchTruncated = patch.Text, patch.SHA256, int(patch.Bytes), patch.Truncated
	}
	return gs, errs
}

// rangeSince reads what lies between the previous experiment's HEAD and
// head, waiting for that experiment's capture to finish (it began
// earlier, so it is usually done). It is nil when there is no previous
// HEAD or it is the same; when ctx ends first (timeout is its deadline)
// the range is recorded with only To and an Err saying so, not left out
// silently.
func rangeSince(ctx context.Context, r *git.Repo, prev *captureSlot, head string, timeout time.Duration) *event.CommitRange {
	if prev == nil || head == "" {
		return nil
	}
	select {
	case <-prev.done:
	case <-ctx.Done():
		return &event.CommitRange{To: head, Err: rangeWaitErr(ctx.Err(), timeout)}
	}
	if prev.head == "" || prev.head == head {
		return nil
	}
	rg, err := r.Range(ctx, prev.head, head, ledger.MaxRangeItems)
	if err != nil {
		return &event.CommitRange{From: prev.head, To: head, Err: errWords(err, timeout)}
	}
	return commitRange(rg)
}

// rangeWaitErr says why the range since the previous experiment was not
// read: its capture (which knows its HEAD) had not finished.
func rangeWaitErr(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("timed out reading the range from the previous experiment's HEAD: its capture did not finish within %v", timeout)
	}
	return "the range from the previous experiment's HEAD was not read: the capture was stopped before the previous one finished"
}

// commitRange is a git range as the journal records it, remote text
// sanitised.
func commitRange(rg git.Range) *event.CommitRange {
	clean := func(in []string) []string {
		var out []string
		for _, s := range in {
			out = append(out, sanitize.String(s))
		}
		return out
	}
	return &event.CommitRange{From: rg.From, To: rg.To, Ahead: clean(rg.Ahead), Behind: clean(rg.Behind), Files: clean(rg.Files),
		AheadTotal: rg.AheadTotal, BehindTotal: rg.BehindTotal, FilesTotal: rg.FilesTotal}
}

// openRepo opens the checkout once; a failure is retried by the next
// capture. repoMu is not held across the remote call (a slow host would
// hold up every other reader of the checkout): two first calls at once
// may both open it, and the first to finish is kept.
func (l *Lab) openRepo(ctx context.Context) (*git.Repo, error) {
	l.repoMu.Lock()
	r := l.repo
	l.repoMu.Unlock()
	if r != nil {
		return r, nil
	}
	r, err := git.Open(ctx, l.Host, l.RepoPath)
	if err != nil {
		return nil, err
	}
	l.repoMu.Lock()
	defer l.repoMu.Unlock()
	if l.repo == nil {
		l.repo = r
	}
	return l.repo, nil
}

// probe runs one version probe with its deadline.
func (l *Lab) probe(ctx context.Context, p config.VersionProbe, timeout time.Duration) event.Version {
	v := event.Version{Name: sanitize.String(p.Name), Command: sanitize.String(p.Command)}
	start := time.Now()
	defer func() { v.Millis = time.Since(start).Milliseconds() }()
	secs := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
	cmd, err := remote.Command("sh", "-c", probeScript, "flightdeck-probe", secs, p.Command)
	if err != nil {
		v.Err = "cannot run: " + errWords(err, timeout)
		return v
	}
	// The host's timeout ends the probe; this deadline, a second later, is
	// for a host without one (or a connection that hangs).
	rctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	res, err := l.Host.Run(rctx, cmd, nil)
	var ee *remote.ExitError
	switch {
	case errors.As(err, &ee) && ee.Code == 124, err != nil && (errors.Is(err, context.DeadlineExceeded) || rctx.Err() == context.DeadlineExceeded):
		v.Err = "timed out after " + timeout.String()
	case errors.As(err, &ee):
		v.Err = clipRunes(ee.Error())
		stderr := res.Stderr
		if len(stderr) == 0 {
			stderr = ee.Stderr
		}
		if w := telling(stderr); w != "" {
			v.Err = clipRunes(ee.Error() + ": " + w)
		}
	case err != nil:
		v.Err = clipRunes(errWords(err, timeout))
	default:
		v.Value = firstLine(res.Stdout)
		if v.Value == "" {
			v.Value = firstLine(res.Stderr) // python2 --version and the like print there
		}
		if v.Value == "" {
			v.Err = "no output"
		}
	}
	return v
}

// firstLine is b's first non-blank line, trimmed, sanitised and cut.
func firstLine(b []byte) string { return clipRunes(sanitize.FirstLine(string(b))) }

// telling is the line of a failed probe's stderr that says why: the first
// non-blank one, or the last for a Python traceback ("ModuleNotFoundError:
// No module named 'torch'").
func telling(stderr []byte) string {
	var first, last string
	for line := range strings.Lines(string(stderr)) {
		if s := strings.TrimSpace(line); s != "" {
			if first == "" {
				first = s
			}
			last = s
		}
	}
	if strings.HasPrefix(first, "Traceback (most recent call last)") {
		first = last
	}
	return sanitize.String(first)
}

func clipRunes(s string) string {
	if utf8.RuneCountInString(s) <= maxVersionRunes {
		return s
	}
	r := []rune(s)
	return string(r[:maxVersionRunes]) + "…"
}

// errWords is an error as a fingerprint records it: one sanitised line, a
// deadline as "timed out after 10s".
func errWords(err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out after " + timeout.String()
	case errors.Is(err, context.Canceled):
		return "cancelled: the session is closing"
	}
	s, _, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	return sanitize.String(s)
}

// withStderr adds a failed command's first stderr line to its error.
func withStderr(err error, stderr []byte) error {
	var ee *remote.ExitError
	if errors.As(err, &ee) {
		if w := telling(stderr); w != "" {
			return fmt.Errorf("%w: %s", err, w)
		}
	}
	return err
}

// redactLaunch returns a copy of a launch safe to record and show: env
// values of secret-looking names (server.Redact) and secret argv values
// (server.RedactArgv) replaced by "<redacted>".
func redactLaunch(l event.LaunchInfo) *event.LaunchInfo {
	out := server.RedactLaunch(l)
	return &out
}
