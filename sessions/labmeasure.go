package sessions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// ErrNoRepo is returned by Lab.Range when the Lab has no checkout to read
// (no repository configured for the host).
var ErrNoRepo = errors.New("no git checkout is configured for this host (--repo, or repo in its [hosts] table)")

// Baseline marks experiment id as the session's baseline (event.Baseline,
// published before Baseline returns): the header shows the open
// experiment's delta against it and comparisons default to it. id ""
// clears the mark. Errors: an id that is no experiment of the session
// ("no experiment \"e9\"": names are not accepted, ids are what the
// journal records), ErrLabClosed, or ctx's.
func (l *Lab) Baseline(ctx context.Context, id string) error {
	id = clean(id)
	return l.act(ctx, func() error {
		if id != "" && !l.knowsLocked(id) {
			return fmt.Errorf("no experiment %q", id)
		}
		l.decideLocked(time.Now(), event.Baseline{Exp: id})
		return nil
	})
}

// Range reads what lies between two commits of the server's checkout, live
// on the host (for a compare view whose range was not recorded): the
// commits each way and the files that differ, lists cut at
// ledger.MaxRangeItems with the totals counting all. from and to are
// commit ids (full or abbreviated) or refs. It gives up after
// RangeTimeout (3× the probe timeout: the git part of a fingerprint's
// deadline). Errors: ErrNoRepo, a refused ref (wrapping git.ErrBadRef), an
// unknown commit (git's words), the host's error, "timed out after …"
// (wrapping context.DeadlineExceeded), or ctx's.
func (l *Lab) Range(ctx context.Context, from, to string) (*event.CommitRange, error) {
	if l.Host == nil || l.RepoPath == "" {
		return nil, ErrNoRepo
	}
	timeout := l.RangeTimeout()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wrap := func(err error) error {
		if ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("commits between %s and %s: timed out after %v: %w", clean(from), clean(to), timeout, context.DeadlineExceeded)
		}
		return fmt.Errorf("commits between %s and %s: %w", clean(from), clean(to), err)
	}
	r, err := l.openRepo(rctx)
	if err != nil {
		return nil, wrap(err)
	}
	rg, err := r.Range(rctx, from, to, ledger.MaxRangeItems)
	if err != nil {
		return nil, wrap(err)
	}
	return commitRange(rg), nil
}

// RangeTimeout is how long Range waits for the host: 3× the probe
// timeout (Lab.ProbeTimeout, else DefaultProbeTimeout).
func (l *Lab) RangeTimeout() time.Duration { return 3 * l.probeTimeout() }

// beginRepeat tags the open experiment as launch 1 of n of a repeat (it is
// the series) and renames it "<name> #1/n" when the Lab named it; the
// exp-repeat is published before it returns. undo is what abandonRepeat
// needs to take the tag back. Errors: ErrNoExperiment, ErrLabClosed, or
// ctx's.
func (l *Lab) beginRepeat(ctx context.Context, n int) (series string, undo repeatUndo, err error) {
	err = l.act(ctx, func() error {
		cur := l.ledger.Current()
		if cur == nil {
			return ErrNoExperiment
		}
		series = cur.ID
		now := time.Now()
		r := event.Repeat{Exp: series, Series: series, I: 1, N: n}
		undo = repeatUndo{series: series, tag: repeatTag(1, n), oldTag: l.tags[series], next: l.next}
		if prev, ok := l.repeats[series]; ok {
			undo.prev = &prev
		}
		l.repeats[series] = r
		l.decideLocked(now, r)
		tag := undo.tag
		old := l.tags[series]
		l.tags[series] = tag
		if l.auto[series] {
			name := trimSuffix(cur.Name, old) + tag
			if _, ok := l.defaulted[series]; ok {
				l.defaulted[series] = name // the fingerprint's rename compares with it
			}
			if name != cur.Name {
				undo.renamed = true
				l.decideLocked(now, event.ExperimentUpdate{Exp: series, Name: name})
			}
		}
		return nil
	})
	return series, undo, err
}

// repeatUndo is what beginRepeat did to the series' experiment.
type repeatUndo struct {
	series      string
	tag, oldTag string        // the name suffix beginRepeat gave, and the one before ("" for none)
	prev        *event.Repeat // the series' tag before (a launch of an earlier repeat); nil when none
	renamed     bool          // beginRepeat renamed it
	next        int           // the Lab's experiment counter then: launches of this repeat are numbered above it
}

// abandonRepeat takes back beginRepeat's tag when the repeat ended before
// its second launch started (no experiment is tagged launch 2 of the
// series; else it does nothing): the series gets its name back (when the
// Lab named it and it was not renamed by hand since) and, since the
// journal cannot unsay its exp-repeat, a corrected one: the tag it had
// before, or launch 1 of 1 — a repeat that made one launch, which no
// comparison takes for a series of launches. Errors: ErrLabClosed, or
// ctx's.
func (l *Lab) abandonRepeat(ctx context.Context, u repeatUndo) error {
	return l.act(ctx, func() error {
		for id, r := range l.repeats {
			if n, err := strconv.Atoi(strings.TrimPrefix(id, "e")); err == nil && n > u.next && r.Series == u.series && r.I >= 2 {
				return nil // this repeat's second launch started
			}
		}
		x := l.ledger.Find(u.series)
		if x == nil || x.ID != u.series {
			return nil
		}
		now := time.Now()
		r := event.Repeat{Exp: u.series, Series: u.series, I: 1, N: 1}
		if u.prev != nil {
			r = *u.prev
		}
		l.repeats[u.series] = r
		l.decideLocked(now, r)
		if l.tags[u.series] != u.tag {
			return nil
		}
		if u.oldTag == "" {
			delete(l.tags, u.series)
		} else {
			l.tags[u.series] = u.oldTag
		}
		if u.renamed && l.auto[u.series] && strings.HasSuffix(x.Name, u.tag) {
			name := trimSuffix(x.Name, u.tag) + u.oldTag
			if d, ok := l.defaulted[u.series]; ok && d == x.Name {
				l.defaulted[u.series] = name
			}
			l.decideLocked(now, event.ExperimentUpdate{Exp: u.series, Name: name})
		}
		return nil
	})
}

func trimSuffix(s, suffix string) string {
	if suffix != "" && len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)]
	}
	return s
}

// armRepeat makes the next launch-started experiment launch i of n of
// series (see startLocked); disarmRepeat takes it back (the launch
// failed).
func (l *Lab) armRepeat(series string, i, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = &event.Repeat{Series: series, I: i, N: n}
}

func (l *Lab) disarmRepeat() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = nil
}

// repeatExp is the experiment tagged as launch i of series; "" when none
// is (yet).
func (l *Lab) repeatExp(series string, i int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, r := range l.repeats {
		if r.Series == series && r.I == i {
			return id
		}
	}
	return ""
}

// serverState is what the Lab knows of the server: its last status, and
// the launch known for it (nil when none: adopted by port or process).
func (l *Lab) serverState() (event.ServerStatus, *event.LaunchInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status, l.knownLaunchLocked()
}

// provisionalOf is experiment id's result so far while it is the open
// one; open is false once it has ended (or another one is open).
func (l *Lab) provisionalOf(id string) (res event.ExperimentResult, open bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.ledger.Current(); c != nil && c.ID == id {
		return l.ledger.Provisional(), true
	}
	return event.ExperimentResult{}, false
}
