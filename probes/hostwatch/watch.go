package hostwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Defaults of Options.
const (
	DefaultInterval  = time.Second
	DefaultKeepalive = 5 * time.Second
)

// Options says what Run watches.
type Options struct {
	// Repo is the checkout to fingerprint (any directory in it; "~/" is
	// the home directory); "" watches none.
	Repo string
	// Server is the server to fingerprint; nil watches none.
	Server *ServerSpec
	// Interval is the time between fingerprints; default DefaultInterval,
	// at least 10 ms.
	Interval time.Duration
	// Keepalive is how long the stream may stay silent before an alive
	// line; default DefaultKeepalive. A closed session makes that write
	// fail and ends Run.
	Keepalive time.Duration
	// MaxDirs caps the working-tree directories watched; default
	// DefaultMaxDirs.
	MaxDirs int
}

// Run is the host side of the watch stream (`flightdeck agent watch`): it
// writes a watch line, a git and a server line for the start (for each one
// watched), then a git or server line whenever that fingerprint changes
// (checked every Interval) and an alive line after Keepalive of silence,
// until ctx ends (nil) or a write fails (the reader is gone: that error).
// It starts no process: fingerprints are stats, small reads and inotify
// (see GitPrint and ServerPrint). Errors: bad options, before anything is
// written.
func Run(ctx context.Context, w io.Writer, o Options) error {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Interval < 10*time.Millisecond {
		return fmt.Errorf("watch: interval %v: must be at least 10ms", o.Interval)
	}
	if o.Keepalive <= 0 {
		o.Keepalive = DefaultKeepalive
	}
	if o.Repo == "" && o.Server == nil {
		return errors.New("watch: nothing to watch (give a checkout, a server, or both)")
	}
	var sp *ServerPrint
	if o.Server != nil {
		var err error
		if sp, err = NewServerPrint(*o.Server); err != nil {
			return fmt.Errorf("watch: %w", err)
		}
	}
	var gp *GitPrint
	if o.Repo != "" {
		gp = NewGitPrint(o.Repo, o.MaxDirs)
		defer gp.Close()
	}

	var buf []byte
	last := time.Now()
	write := func(l Line) error {
		buf = AppendLine(buf[:0], l)
		last = time.Now()
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("watch: writing the stream: %w", err)
		}
		return nil
	}
	if err := write(Line{T: TypeWatch, V: ProtocolVersion, Via: "agent", IntervalMS: o.Interval.Milliseconds()}); err != nil {
		return err
	}
	var gs gitState
	var ss serverState
	if gp != nil {
		gs = gp.read()
		if err := write(Line{T: TypeGit, Why: "start", Capped: gs.capped}); err != nil {
			return err
		}
	}
	if sp != nil {
		ss = sp.read()
		if err := write(Line{T: TypeServer, Why: "start"}); err != nil {
			return err
		}
	}
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			wrote := false
			if gp != nil {
				g := gp.read()
				if why := g.diff(gs); why != "" {
					gs = g
					if err := write(Line{T: TypeGit, Why: why, Capped: g.capped}); err != nil {
						return err
					}
					wrote = true
				}
			}
			if sp != nil {
				s := sp.read()
				if why := s.diff(ss); why != "" {
					ss = s
					if err := write(Line{T: TypeServer, Why: why}); err != nil {
						return err
					}
					wrote = true
				}
			}
			if !wrote && now.Sub(last) >= o.Keepalive {
				if err := write(Line{T: TypeAlive}); err != nil {
					return err
				}
			}
		}
	}
}
