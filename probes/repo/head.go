// Package repo observes the inference server's git checkout on the host:
// which commit is checked out and whether the working tree is dirty. It only
// reads; changing the checkout belongs to remote/git.
package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/hostwatch"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// MaxEntries caps event.RepoHead.Entries (Dirty still counts every path).
const MaxEntries = 500

// sep separates the three git outputs of one Read; git never prints it in
// the fields we ask for (NUL-free formats, %x1e only as our own separator).
const sep = "\x1e\x1e\n"

// Read runs one short shell command on host that prints HEAD, the branch and
// the porcelain status of the repository at path, and parses it. Errors:
// quoting errors for unusable paths, the remote error (an *remote.ExitError
// whose Stderr says why, e.g. "not a git repository"), or a parse error.
func Read(ctx context.Context, host remote.Host, path string) (event.RepoHead, error) {
	logCmd, err := remote.Command("git", "-C", path, "log", "-1", "--format=%H%x1f%h%x1f%ct%x1f%s")
	if err != nil {
		return event.RepoHead{}, err
	}
	branchCmd, _ := remote.Command("git", "-C", path, "symbolic-ref", "-q", "HEAD")
	statusCmd, _ := remote.Command("git", "--no-optional-locks", "-C", path, "status", "--porcelain=v1", "-z")
	cmd := logCmd + " && printf '\\036\\036\\n' && { " + branchCmd + " || true; } && printf '\\036\\036\\n' && " + statusCmd
	res, err := host.Run(ctx, cmd, nil)
	if err != nil {
		var ee *remote.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return event.RepoHead{}, fmt.Errorf("read HEAD of %s: %s", path, bytes.TrimSpace(ee.Stderr))
		}
		return event.RepoHead{}, fmt.Errorf("read HEAD of %s: %w", path, err)
	}
	return parse(path, res.Stdout)
}

func parse(path string, out []byte) (event.RepoHead, error) {
	parts := bytes.SplitN(out, []byte(sep), 3)
	if len(parts) != 3 {
		return event.RepoHead{}, fmt.Errorf("read HEAD of %s: unexpected git output %q", path, truncate(out))
	}
	f := bytes.SplitN(bytes.TrimRight(parts[0], "\n"), []byte{0x1f}, 4)
	if len(f) != 4 || len(f[0]) < 7 {
		return event.RepoHead{}, fmt.Errorf("read HEAD of %s: unexpected git log output %q", path, truncate(parts[0]))
	}
	secs, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil {
		return event.RepoHead{}, fmt.Errorf("read HEAD of %s: commit time %q: %w", path, f[2], err)
	}
	h := event.RepoHead{
		Path:       path,
		Commit:     string(f[0]),
		Short:      string(f[1]),
		CommitTime: time.Unix(secs, 0),
		Subject:    string(f[3]),
		Branch:     strings.TrimPrefix(string(bytes.TrimSpace(parts[1])), "refs/heads/"),
	}
	// porcelain -z: "XY path\0", and renames add "orig\0" after the entry.
	st := parts[2]
	for len(st) > 0 {
		i := bytes.IndexByte(st, 0)
		if i < 0 {
			i = len(st)
		}
		entry := st[:i]
		st = st[min(i+1, len(st)):]
		if len(entry) < 3 {
			continue
		}
		h.Dirty++
		if len(h.Entries) < MaxEntries {
			h.Entries = append(h.Entries, string(entry))
		}
		if entry[0] == 'R' || entry[0] == 'C' {
			if j := bytes.IndexByte(st, 0); j >= 0 {
				st = st[j+1:]
			} else {
				st = nil
			}
		}
	}
	return h, nil
}

func truncate(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// Watcher polls a repository's HEAD and emits an event.RepoHead whenever
// it changes (and once at start), or event.RepoUnreadable when it cannot be read. While the host
// is unreachable it emits nothing: the last HEAD still stands.
type Watcher struct {
	Host     remote.Host
	Path     string
	Interval time.Duration // between polls; default 3 s
	Timeout  time.Duration // deadline of one poll; default 10 s
	// Agent, when set, makes the watcher read only when the host says the
	// checkout may have changed (hostwatch.Trigger: `flightdeck agent
	// watch` through Agent; without an agent, remote.ErrNoAgent, the
	// shell watcher; while neither runs, a poll every Interval), instead
	// of every Interval: nothing is spawned on the host while nothing
	// changes. Nil polls every Interval.
	Agent remote.Agent
	// WatchInterval is how often the host side checks the checkout;
	// default 1 s.
	WatchInterval time.Duration
}

// Run polls until ctx ends, then returns nil.
func (w *Watcher) Run(ctx context.Context, sink event.Sink) error {
	every := w.Interval
	if every <= 0 {
		every = 3 * time.Second
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var last event.RepoHead
	var lastErr string
	var tick <-chan time.Time
	var wake <-chan struct{}
	if w.Agent != nil {
		tr := &hostwatch.Trigger{Host: w.Host, Agent: w.Agent, Poll: every,
			Watch: hostwatch.Options{Repo: w.Path, Interval: w.WatchInterval}}
		wake = tr.Start(ctx)
	} else {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		h, err := Read(pctx, w.Host, w.Path)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, remote.ErrDisconnected), errors.Is(err, context.DeadlineExceeded):
			// The host, not the repository, is unreachable: the last HEAD
			// still stands (the header shows the connection state).
		case err != nil:
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				last = event.RepoHead{}
				sink(event.Event{At: time.Now(), Data: event.RepoUnreadable{Path: w.Path, Err: msg}})
			}
		case !h.Same(last):
			last, lastErr = h, ""
			sink(event.Event{At: time.Now(), Data: h})
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		case <-wake:
		}
	}
}
