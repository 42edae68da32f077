package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightdeck-dev/flightdeck/journal"
	"github.com/flightdeck-dev/flightdeck/remote/server"
)

// ErrNoRepo is returned by Lab.Range when the Lab has no checkout to read
// (no repository configured for the host).
var ErrNoRepo = errors.New("no git checkout is configured for this host (--repo, or repo in its [hosts] table)")

// Baseline marks experiment id as the session's baseline (journal.Baseline,
// published before Baseline returns): the header shows the open
// experiment's delta against it and comparisons default to it. id ""
// clears the mark. Errors: an id that is no experiment of the session
// ("no experiment \"e9\"": names are not accepted, ids are what the
// journal records), ErrLabClosed, or ctx's.
func (l *Lab) Baseline(ctx context.Context, id string) error {
	id = clean(id)
	return l.act(ctx, func() error {
		if id != "" {
			if x := l.ledger.Find(id); x == nil || x.ID != id {
				return fmt.Errorf("no experiment %q", id)
			}
		}
		l.decideLocked(time.Now(), journal.Baseline{Exp: id})
		return nil
	})
}

// Range reads what lies between two commits of the server's checkout, live
// on the host (for a compare view whose range was not recorded): the
// commits each way and the files that differ, lists cut at
// journal.MaxRangeItems with the totals counting all. from and to are
// commit ids (full or abbreviated) or refs. Errors: ErrNoRepo, a refused
// ref (wrapping git.ErrBadRef), an unknown commit (git's words), the
// host's error, or ctx's.
func (l *Lab) Range(ctx context.Context, from, to string) (*journal.CommitRange, error) {
	if l.Host == nil || l.RepoPath == "" {
		return nil, ErrNoRepo
	}
	r, err := l.openRepo(ctx)
	if err != nil {
		return nil, err
	}
	rg, err := r.Range(ctx, from, to, journal.MaxRangeItems)
	if err != nil {
		return nil, fmt.Errorf("commits between %s and %s: %w", clean(from), clean(to), err)
	}
	return commitRange(rg), nil
}

// beginRepeat tags the open experiment as launch 1 of n of a repeat (it is
// the series) and renames it "<name> #1/n" when the Lab named it; the
// exp-repeat is published before it returns. Errors: ErrNoExperiment,
// ErrLabClosed, or ctx's.
func (l *Lab) beginRepeat(ctx context.Context, n int) (series string, err error) {
	err = l.act(ctx, func() error {
		cur := l.ledger.Current()
		if cur == nil {
			return ErrNoExperiment
		}
		series = cur.ID
		now := time.Now()
		r := journal.Repeat{Exp: series, Series: series, I: 1, N: n}
		l.repeats[series] = r
		l.decideLocked(now, r)
		tag := repeatTag(1, n)
		old := l.tags[series]
		l.tags[series] = tag
		if l.auto[series] {
			name := trimSuffix(cur.Name, old) + tag
			if _, ok := l.defaulted[series]; ok {
				l.defaulted[series] = name // the fingerprint's rename compares with it
			}
			if name != cur.Name {
				l.decideLocked(now, journal.ExperimentUpdate{Exp: series, Name: name})
			}
		}
		return nil
	})
	return series, err
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
	l.armed = &journal.Repeat{Series: series, I: i, N: n}
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
func (l *Lab) serverState() (server.Status, *server.LaunchInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status, l.knownLaunchLocked()
}

// provisionalOf is experiment id's result so far while it is the open
// one; open is false once it has ended (or another one is open).
func (l *Lab) provisionalOf(id string) (res journal.Result, open bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.ledger.Current(); c != nil && c.ID == id {
		return l.ledger.Provisional(), true
	}
	return journal.Result{}, false
}
