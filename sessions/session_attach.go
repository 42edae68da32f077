package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// AttachOptions say which host a session acts on and how.
type AttachOptions struct {
	// Host is the connected host; nil attaches none: the session then only
	// changes its journal afterwards (notes, conclusions, the baseline).
	Host remote.Host
	// Target is the host's effective settings (Config.Host(alias)): its
	// log directory (the pidfile and the driver lock), repository and
	// preset.
	Target config.Host
	// Repo is the server's git checkout on the host; "" is Target.Repo.
	// Without one there is no git panel, and fingerprints have no git.
	Repo string
	// OnHost says this machine is the host (local, the demo's simulated
	// host): the journal is there as it is, not mirrored for followers.
	OnHost bool
	// GPUProgram is nvidia-smi on the host ("" = "nvidia-smi").
	GPUProgram string
	// Grace is the time between SIGTERM and SIGKILL of a kill, GPUTimeout
	// how long it waits for the GPU memory (0: the defaults).
	Grace, GPUTimeout time.Duration
	// NoProcessMatch stops the server's discovery from adopting a server
	// by its command line (Control.NoProcessMatch: the demo, tests).
	NoProcessMatch bool
	// GPUCount gives the number of GPUs, the default {tp}; nil counts the
	// GPUs of the last sample on the stream (GPUCount).
	GPUCount func() int
	// BenchTarget names the host in benchmark results ("… via gpu-box");
	// "" is the host's name.
	BenchTarget string
	// ServerPort is the benchmark's target port; nil: the port the stream
	// last named (ServerPort), whose status the benchmark also waits for.
	ServerPort func() int
}

// Attach connects the session to its host, once: it takes the driver lock
// (DriverTake: a second cockpit watches; the state is published when Run
// starts) or prepares its check (DriverCheck), mirrors the journal to the
// host when it is written elsewhere, and makes the parts that act: the
// server Control, the Git of the checkout, and with a journal the Lab of
// experiments and notes, the Bencher and the Repeater. Errors: the
// driver lock's (a cockpit does not open unsure of who drives), or a
// second Attach.
func (s *Session) Attach(ctx context.Context, o AttachOptions) error {
	if s.att.Load() != nil {
		return errors.New("session: attached already")
	}
	a := &attached{host: o.Host, target: o.Target}
	repo := o.Repo
	if repo == "" {
		repo = o.Target.Repo
	}
	if o.Host == nil {
		if s.rec != nil {
			a.lab = &Lab{Config: s.opts.Config, Publish: s.Publish, Numbered: s.rec.prior, Prior: s.knownPrior}
		}
		s.att.Store(a)
		return nil
	}
	switch s.opts.Driver.Mode {
	case DriverTake:
		journalPath := ""
		if s.rec != nil {
			journalPath = s.rec.path()
		}
		d, err := takeLock(ctx, o.Host, o.Target.LogDir, journalPath, o.OnHost, s.opts.Driver)
		if err != nil {
			return err
		}
		a.drv = d
	case DriverCheck:
		a.drv = &driving{mode: DriverCheck, host: o.Host, dir: o.Target.LogDir, force: s.opts.Driver.Force}
	}
	gpus := o.GPUCount
	if gpus == nil {
		gpus = s.GPUCount
	}
	a.control = &Control{Host: o.Host, Config: s.opts.Config, Target: o.Target, GPUProgram: o.GPUProgram,
		Grace: o.Grace, GPUTimeout: o.GPUTimeout, GPUCount: gpus, NoProcessMatch: o.NoProcessMatch,
		Publish: s.actionSink, Follow: s.follow}
	if a.drv != nil {
		a.control.Guard = a.drv.guard
		if a.drv.mode == DriverTake {
			a.control.Fence = a.drv.fence
		}
	}
	if repo != "" {
		a.git = &Git{Host: o.Host, Path: repo, Publish: s.actionSink}
		if a.drv != nil {
			a.git.Guard = a.drv.guard
		}
	}
	if d, ok := o.Host.(remote.Dialer); ok {
		target := o.BenchTarget
		if target == "" {
			target = o.Host.Name()
		}
		a.bench = &Bencher{Dialer: d, Port: s.ServerPort, Server: &s.server, Target: target, Publish: s.Publish}
		if o.ServerPort != nil {
			a.bench.Port, a.bench.Server = o.ServerPort, nil
		}
	}
	if s.rec != nil {
		a.lab = &Lab{Host: o.Host, RepoPath: repo, Config: s.opts.Config, Preset: o.Target.Preset, Publish: s.Publish,
			Numbered: s.rec.prior, Prior: s.knownPrior}
		if a.bench != nil {
			a.bench.Experiment = a.lab.currentID
		}
		a.repeat = &Repeater{Control: a.control, Lab: a.lab, Bencher: a.bench, Publish: s.Publish}
		a.bisect = &bisecter{Control: a.control, Lab: a.lab, Git: a.git, Bencher: a.bench, Publish: s.Publish,
			Journal: s.rec.path(), Opened: s.opened}
		lab := a.lab
		a.bisect.Experiments = func() []ledger.Experiment { return s.noiseExperiments(lab) }
	}
	s.att.Store(a)
	return nil
}

// attachedOr returns the attached parts, or ErrNotYet.
func (s *Session) attachedOr() (*attached, error) {
	if a := s.att.Load(); a != nil {
		return a, nil
	}
	return nil, ErrNotYet
}

// LockState is the driver lock's latest state, and true, when the session
// takes the lock (DriverTake); false otherwise.
func (s *Session) LockState() (event.DriverState, bool) {
	a := s.att.Load()
	if a == nil || a.drv.lock() == nil {
		return event.DriverState{}, false
	}
	return a.drv.lock().State(), true
}

// MayAct returns why the session may not act on its host now (the driver
// lock: DrivenError for a CLI session while a cockpit drives, the lock's
// refusal for a cockpit that watches), nil when it may. Each action checks
// it again right before it acts.
func (s *Session) MayAct(ctx context.Context) error {
	a, err := s.attachedOr()
	if err != nil {
		return err
	}
	if a.drv == nil {
		return nil
	}
	return a.drv.guard(ctx)
}

// ErrNoJournal is returned by the experiment and note actions of a session
// without a journal.
var ErrNoJournal = errors.New("no journal: experiments and notes need one (leave --no-journal out)")

// lab returns the session's Lab, or why there is none.
func (s *Session) lab() (*Lab, error) {
	a, err := s.attachedOr()
	if err != nil {
		return nil, err
	}
	if a.lab == nil {
		return nil, ErrNoJournal
	}
	return a.lab, nil
}
