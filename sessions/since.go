package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/hostdiff"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// SinceOptions say where Session.SinceLast looks for what earlier
// sessions recorded about the host.
type SinceOptions struct {
	// Dir holds the local journals, every sub-directory searched; "" is
	// journal.DefaultDir(). The session's own journal is read too,
	// wherever it is (only what earlier sessions wrote in it counts).
	Dir string
	// Host names the host as the journals' headers do; "" is the
	// session's header's Host, else the attached host's Name.
	Host string
	// NoMirror leaves the host's mirrors (~/.flightdeck/journals on the
	// host) unread when no local journal has a state.
	NoMirror bool
}

// Bounds of the mirror fallback: the newest mirrors tried, and the bytes
// read of each (a longer one is read from its start: the states of a
// session come early).
const (
	sinceJournals   = 20 // the newest local journals of the host read
	sinceMirrors    = 4
	sinceMirrorMax  = 32 << 20
	sinceReflogRead = 50 // reflog entries read for the time between
)

// priorState is the latest state an earlier session recorded for the host.
type priorState struct {
	fp      event.Fingerprint
	at      time.Time // its event time
	journal string    // where it was read: a local path, or the mirror's path on the host
	mirror  bool
	exp     string // the experiment whose fingerprint it is; "" for a host-state
}

// SinceLast captures the host's state now (the Lab's fingerprint capture,
// with its probe timeouts, plus the running server's launch when
// flightdeck launched it) and compares it with the last state an earlier
// session recorded for the same host and checkout: the latest host-state
// or experiment fingerprint of its journals (SinceOptions.Dir and the
// session's own, newest first), else of the host's mirrors. It publishes
// nothing (RecordSinceLast does); `flightdeck server status` prints what
// it returns. Errors: ErrNotYet before Attach, an attachment without a
// host; what cannot be read (a journal, the reflog) goes to the changes'
// Errs instead.
func (s *Session) SinceLast(ctx context.Context, o SinceOptions) (event.HostState, event.HostChanges, error) {
	a, err := s.attachedOr()
	if err != nil {
		return event.HostState{}, event.HostChanges{}, err
	}
	if a.host == nil {
		return event.HostState{}, event.HostChanges{}, errors.New("no host attached: nothing to compare")
	}
	host := o.Host
	if host == "" {
		host = s.opts.Header.Host
	}
	if host == "" {
		host = a.host.Name()
	}
	lab, noGPUs := a.lab, s.lv.Load() == nil // without the probes no GPU sample comes
	repo := ""
	if a.git != nil {
		repo = a.git.Path
	}
	if lab == nil {
		lab = &Lab{Host: a.host, RepoPath: repo, Config: s.opts.Config, Preset: a.target.Preset}
		noGPUs = true
	}
	in := captureInput{at: time.Now(), preset: a.target.Preset, noGPUs: noGPUs}
	if a.control != nil {
		fctx, cancel := context.WithTimeout(ctx, 3*lab.probeTimeout())
		f, err := a.control.Find(fctx)
		cancel()
		if err == nil && f.Running && f.How == server.ByPidfile && f.Record != nil {
			in.launch = redactLaunch(f.Record.Launch)
			if in.launch.Preset != "" {
				in.preset = in.launch.Preset
			}
		}
	}
	fp := lab.capture(ctx, in)
	st := event.HostState{Host: host, Fingerprint: fp}
	if fp.Git != nil && fp.Git.Repo != "" {
		repo = fp.Git.Repo
	}
	hc := event.HostChanges{Host: host, Repo: repo}

	dir := o.Dir
	if dir == "" {
		if dir, err = journal.DefaultDir(); err != nil {
			hc.Errs = append(hc.Errs, "local journals: "+err.Error())
		}
	}
	prior, errs := lastLocalState(dir, host, s.JournalPath(), s.opened, repo)
	hc.Errs = append(hc.Errs, errs...)
	if prior == nil && !o.NoMirror {
		prior, errs = lastMirrorState(ctx, a.host, repo, a.drv.ownMirror())
		hc.Errs = append(hc.Errs, errs...)
	}
	if prior == nil {
		return st, hc, nil
	}
	hc.Seen, hc.Since, hc.Journal, hc.Mirror, hc.Exp = true, prior.fp.At, prior.journal, prior.mirror, prior.exp
	if hc.Since.IsZero() {
		hc.Since = prior.at
	}
	b, errs := s.between(ctx, lab, prior.fp.Git, fp.Git)
	hc.Errs = append(hc.Errs, errs...)
	hc.Changes = hostdiff.Compare(prior.fp, fp, b)
	return st, hc, nil
}

// RecordSinceLast is SinceLast published: the host-state, then the
// host-changes (the cockpit's banner; the journal keeps both, so the next
// session compares with this one). A cockpit runs it in the background
// once its probes are wired (Run's then), so that it delays no frame and
// the GPUs of the first sample are in the state; Close waits for it. It
// spawns nothing once it returned.
func (s *Session) RecordSinceLast(ctx context.Context, o SinceOptions) {
	s.bgMu.Lock()
	if s.closing {
		s.bgMu.Unlock()
		return
	}
	s.bg.Add(1)
	s.bgMu.Unlock()
	defer s.bg.Done()
	st, hc, err := s.SinceLast(ctx, o)
	if err != nil || ctx.Err() != nil {
		return // no host; or the session is closing: a capture cut short is no state to compare with
	}
	s.Publish(event.Event{At: time.Now(), Data: st})
	s.Publish(event.Event{At: time.Now(), Data: hc})
}

// waitSince waits for RecordSinceLast and LoadHistory to return (Close):
// their events then reach the journal (and the screen) before it closes,
// and no journal is read after the session.
func (s *Session) waitSince() {
	s.bgMu.Lock()
	s.closing = true
	s.bgMu.Unlock()
	s.bg.Wait()
}

// between reads what the checkout says of the time between two states:
// HEAD's reflog and, when HEAD moved, the commits and files between.
func (s *Session) between(ctx context.Context, lab *Lab, was, now *event.GitState) (hostdiff.Between, []string) {
	var b hostdiff.Between
	if was == nil || now == nil || was.Head == "" || now.Head == "" || was.Head == now.Head {
		return b, nil
	}
	timeout := 3 * lab.probeTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := lab.openRepo(ctx)
	if err != nil {
		return b, []string{"git: " + errWords(err, timeout)}
	}
	var errs []string
	if st, err := r.Status(ctx, sinceReflogRead); err != nil {
		errs = append(errs, "reflog: "+errWords(err, timeout))
	} else {
		for _, e := range st.Reflog {
			e.Short, e.Action, e.Message = sanitize.String(e.Short), sanitize.String(e.Action), sanitize.String(e.Message)
			b.Reflog = append(b.Reflog, e)
		}
	}
	rg, err := r.Range(ctx, was.Head, now.Head, ledger.MaxRangeItems)
	if err != nil {
		b.Range = &event.CommitRange{From: was.Head, To: now.Head, Err: errWords(err, timeout)}
	} else {
		b.Range = commitRange(rg)
	}
	return b, errs
}

// lastLocalState is the latest state recorded for host with repo in the
// journals under dir and in own (the session's journal, of which only
// what was written before start counts), nil when none has one. Journals
// are read newest first, and no further once one's last change is older
// than the state found, nor beyond the sinceJournals newest. A journal
// that cannot be read is skipped and named in errs.
func lastLocalState(dir, host, own string, start time.Time, repo string) (*priorState, []string) {
	js, skipped, err := history.FindAll(dir, host, own)
	var errs []string
	if err != nil {
		errs = append(errs, "local journals: "+err.Error())
	}
	for _, s := range skipped {
		errs = append(errs, "not read: "+s) // it may hold the last session: never claim a first one
	}
	ownAbs := ""
	if own != "" {
		ownAbs, _ = filepath.Abs(own)
	}
	var best *priorState
	for i, j := range js {
		if i == sinceJournals {
			if best == nil {
				errs = append(errs, fmt.Sprintf("only the newest %d journals of the host read", sinceJournals))
			}
			break
		}
		if best != nil && j.ModTime.Before(best.at) {
			continue // nothing written in it after the state found
		}
		before := time.Time{}
		if j.Path == ownAbs {
			before = start
		}
		p, err := latestState(j.Path, repo, before)
		if err != nil {
			errs = append(errs, "journal "+j.Name()+": "+err.Error())
			continue
		}
		if p != nil && (best == nil || p.at.After(best.at)) {
			best = p
		}
	}
	return best, errs
}

// latestState is the latest host-state or experiment fingerprint of the
// journal at path whose checkout is repo (any, for repo ""), among the
// events before before (all, when zero); nil when it has none.
func latestState(path, repo string, before time.Time) (*priorState, error) {
	j, err := journal.Open(path)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	var best *priorState
	err = j.ScanKinds(func(e event.Event) error {
		if !before.IsZero() && !e.At.Before(before) {
			return nil
		}
		var p priorState
		if d, ok := e.Data.(event.HostState); ok {
			p = priorState{fp: d.Fingerprint}
		} else if d, ok := e.Data.(event.ExperimentFingerprint); ok {
			p = priorState{fp: d.Fingerprint, exp: d.Exp}
		} else {
			return nil // ScanKinds gives no other kind
		}
		if repo != "" && (p.fp.Git == nil || p.fp.Git.Repo != repo) {
			return nil
		}
		p.at, p.journal = e.At, path
		if best == nil || !p.at.Before(best.at) {
			best = &p
		}
		return nil
	}, event.KindHostState, event.KindExperimentFingerprint)
	return best, err
}

// mirrorList lists the host's mirrors, newest first (fixed text).
// No directory, or none in it, lists nothing and exits 0: any failure is
// one.
const mirrorList = `cd ~/` + MirrorDir + ` 2>/dev/null || exit 0; ls -t -- *.jsonl 2>/dev/null | head -n ` + "8"

// lastMirrorState is the latest state for repo in the newest mirrors on
// the host (~/.flightdeck/journals: journals of cockpits that ran
// elsewhere), skipping the session's own (skip, a base name); nil when
// none has one. Each is read, at most sinceMirrorMax bytes, into a 0600
// temporary file and parsed as a journal.
func lastMirrorState(ctx context.Context, h remote.Host, repo, skip string) (*priorState, []string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := h.Run(ctx, mirrorList, nil)
	if err != nil {
		return nil, []string{"the host's mirrors: " + errWords(withStderr(err, res.Stderr), 30*time.Second)}
	}
	var errs []string
	tried := 0
	for _, name := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		if name == "" || name == skip || strings.ContainsAny(name, "/\x00") {
			continue
		}
		if tried++; tried > sinceMirrors {
			break
		}
		p, err := readMirror(ctx, h, name, repo)
		if err != nil {
			errs = append(errs, "mirror "+sanitize.String(name)+": "+err.Error())
			continue
		}
		if p != nil {
			return p, errs
		}
	}
	return nil, errs
}

// readMirror reads one mirror and finds its latest state for repo.
func readMirror(ctx context.Context, h remote.Host, name, repo string) (*priorState, error) {
	q, err := remote.Quote(name)
	if err != nil {
		return nil, err
	}
	remotePath := "~/" + MirrorDir + "/" + q
	res, err := h.Run(ctx, "head -c "+strconv.Itoa(sinceMirrorMax)+" -- "+remotePath, nil)
	if err != nil {
		return nil, withStderr(err, res.Stderr)
	}
	f, err := os.CreateTemp("", "flightdeck-mirror-*.jsonl") // 0600
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(res.Stdout)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, werr
	}
	p, err := latestState(f.Name(), repo, time.Time{})
	if err != nil || p == nil {
		return nil, err
	}
	p.journal, p.mirror = fmt.Sprintf("~/%s/%s", MirrorDir, sanitize.String(name)), true
	return p, nil
}
