package tui

import (
	"charm.land/bubbles/v2/key"

	"github.com/flightdeck-dev/flightdeck/tui/component"
)

func bind(group, help, desc string, keys ...string) component.Binding {
	return component.New(group, help, desc, keys...)
}

// footer marks b for the footer's short help.
func footer(b component.Binding) component.Binding { return b.InFooter() }

// KeyMap is every binding of the cockpit. Primary bindings are plain
// letters (tmux without extended keys cannot tell shift+enter from enter).
type KeyMap struct {
	Help     component.Binding
	Quit     component.Binding
	Up       component.Binding
	Down     component.Binding
	PageUp   component.Binding
	PageDown component.Binding
	Bottom   component.Binding
	Top      component.Binding

	// TakeOver takes the driver lock from the cockpit that drives the
	// host (Options.Driver).
	TakeOver component.Binding

	// Server control (Options.Control).
	Kill    component.Binding
	Launch  component.Binding
	Profile component.Binding

	// Git opens and closes the git panel (Options.Git, or a replayed
	// event.GitStatus); the keys that act in it are the panel's
	// (tui/panels/git).
	Git component.Binding

	// Experiment starts or ends an experiment, Note writes a note
	// (Options.Experiments); Experiments opens and closes the experiments
	// panel, whose keys (conclusion, marks, compare, baseline) are the
	// panel's (tui/panels/experiments).
	Experiment  component.Binding
	Note        component.Binding
	Experiments component.Binding

	// Axis cycles how the tok/s sparkline is scaled (spark.Axis): around
	// the baseline, auto, from zero. It only changes the view, so it acts
	// in a replay too.
	Axis component.Binding
	// Since lists what changed on the host since the last session
	// recorded for it (the banner's changes, in full).
	Since component.Binding
	// Redial redials the host now while its connection is reconnecting
	// or not answering (Options.Link).
	Redial component.Binding
}

// logCovered is why the log is not on screen: a panel shown in its place
// (the log's own keys say so).
func logCovered(m *Model) string {
	if m.git.Open {
		return "the git panel is open (g or esc returns to the log)"
	}
	if m.exp.Open {
		return "the experiments panel is open (x or esc returns to the log)"
	}
	if m.bis.Open {
		return "the bisect panel is open (i or esc returns to the log)"
	}
	return ""
}

// DefaultKeyMap returns the standard bindings.
func DefaultKeyMap() KeyMap {
	k := KeyMap{
		Help:     footer(bind("view", "?", "help", "?")),
		Quit:     footer(bind("view", "q", "quit", "q", "ctrl+c")),
		Up:       bind("log", "k/up", "scroll up", "k", "up"),
		Down:     bind("log", "j/down", "scroll down", "j", "down"),
		PageUp:   bind("log", "pgup", "page up", "pgup"),
		PageDown: bind("log", "pgdn", "page down", "pgdown"),
		Bottom:   bind("log", "G/end", "bottom, follow", "G", "end"),
		Top:      bind("log", "home", "top", "home"),

		Kill:        footer(bind("actions", "K", "kill", "K")),
		Launch:      footer(bind("actions", "L", "launch", "L")),
		Profile:     footer(bind("actions", "p", "profile", "p")),
		Git:         footer(bind("actions", "g", "git", "g")),
		Experiment:  footer(bind("actions", "e", "experiment", "e")),
		Note:        footer(bind("actions", "n", "note", "n")),
		Experiments: footer(bind("view", "x", "experiments", "x")),
		Axis:        footer(bind("view", "z", "axis", "z")),
		TakeOver:    bind("actions", "T", "take over", "T"),
		Since:       bind("host", "H", "host changes", "H"),
		Redial:      bind("host", "C", "redial now", "C"),
	}
	// What is hard to take back asks first (a component.Confirm; the git
	// panel's keys are marked by the panel).
	for _, b := range []*component.Binding{&k.Kill, &k.TakeOver} {
		b.Dangerous = true
	}
	k.Quit.Long = "quit (the server keeps running)"
	k.Kill.Long = "kill the server: asks first, then waits for its GPU memory"
	k.Launch.Long = "launch or relaunch the server (form; shows the command and env diff)"
	k.Profile.Long = "choose the env profile (NCCL settings) for the next launch"
	k.TakeOver.Long = "take over from the cockpit that drives the host (asks first)"
	k.Axis.Long = "tok/s axis: baseline/auto/zero"
	k.Since.Long = "host changes since your last session here: what changed, in full"
	k.Redial.Long = "redial now: while reconnecting, or while the host is not answering"
	expBindings(&k)
	return k
}

// wireKeys gives every binding of m.keys the reason it cannot act now,
// read from m (component.Binding.Disabled).
func (m *Model) wireKeys() {
	k := &m.keys
	why := func(f func(*Model) string) func() string { return func() string { return f(m) } }
	k.TakeOver.Disabled = why(takeOverUnavailable)
	k.Kill.Disabled = why(killUnavailable)
	k.Launch.Disabled = why(launchUnavailable)
	k.Profile.Disabled = why(profileUnavailable)
	k.Experiment.Disabled = why(expUnavailable("an experiment"))
	k.Note.Disabled = why(expUnavailable("a note"))
	k.Git.Disabled = m.git.Unavailable
	k.Since.Disabled = m.since.Unavailable
	k.Redial.Disabled = why(redialUnavailable)
}

// all lists the cockpit's bindings in help order, its panels' among them
// (footerKeys is the footer's).
func (m *Model) all() []*component.Binding {
	k := &m.keys
	out := []*component.Binding{&k.Help, &k.Kill, &k.Launch, &k.Profile, &k.Git, &k.Experiment, &k.Note}
	out = append(out, m.bench.Bindings()...)
	out = append(out, m.log.Bindings()...)
	out = append(out, &k.Axis, &k.Quit, &k.Up, &k.Down, &k.PageUp, &k.PageDown, &k.Bottom, &k.Top)
	out = append(out, m.gpus.Bindings()...)
	out = append(out, &k.Experiments)
	out = append(out, m.exp.Bindings()...)
	out = append(out, &k.TakeOver)
	out = append(out, m.git.Bindings()...)
	out = append(out, m.bis.Bindings()...)
	return append(out, &k.Since, &k.Redial)
}

// matchOrder lists the bindings in the order a key is matched: the
// experiments panel's own keys first (w, space and c are the log's and
// git's elsewhere), then all's.
func (m *Model) matchOrder() []*component.Binding {
	return append(m.exp.Exclusive(), m.all()...)
}

// footerKeys lists the bindings in footer order: all's, with the
// experiments panel's key next to the git panel's.
func (m *Model) footerKeys() []*component.Binding {
	k := &m.keys
	var out []*component.Binding
	for _, b := range m.all() {
		switch b {
		case &k.Experiments, &k.TakeOver: // T: only while watching (the footer adds it)
			continue
		case &k.Git:
			out = append(out, b, &k.Experiments)
			continue
		}
		out = append(out, b)
	}
	return out
}

// footerLike is the footer group b's place is decided with: the
// experiments panel's key, the bisect panel's and the axis key give way
// like the actions (like g) do.
func (m *Model) footerLike(b *component.Binding) string {
	if k := &m.keys; b == &k.Experiments || b == &k.Axis || b == &m.bis.PanelKey {
		return "actions"
	}
	return b.Group
}

// ShortHelp lists the footer bindings (bubbles/help.KeyMap), in the order
// of DESIGN.md.
func (m *Model) ShortHelp() []key.Binding {
	var out []key.Binding
	for _, b := range m.footerKeys() {
		if b.Short {
			out = append(out, b.Binding)
		}
	}
	return out
}

// FullHelp groups every binding by Group (bubbles/help.KeyMap).
func (m *Model) FullHelp() [][]key.Binding {
	var out [][]key.Binding
	for _, g := range helpGroups {
		var col []key.Binding
		for _, b := range m.all() {
			if b.Group == g {
				col = append(col, b.Binding)
			}
		}
		out = append(out, col)
	}
	return out
}

var helpGroups = []string{"log", "view", "git", "actions", "host"}
