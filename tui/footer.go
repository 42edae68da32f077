package tui

// The footer: the status line or the short help of what has focus.

import (
	"strings"

	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// footer is the status line when a key could not act, else the short
// help: "key desc" pairs in ShortHelp order while they fit, with keys that
// cannot act now dimmed.
func (m *Model) footer(width int) string {
	st := &m.styles
	if m.status != "" {
		return st.Tone(m.statusTone).Render(style.Truncate(m.status, width))
	}
	if d := m.overlay.Top(); d != nil {
		return component.HintLine(st, d.Help(), width)
	}
	if m.git.Open {
		return m.git.Footer(st, width, &m.keys.Help, &m.keys.Git, &m.keys.Quit)
	}
	if m.exp.Open {
		k := &m.keys
		return m.exp.Footer(st, width, &k.Help, &k.Experiment, &k.Note, &k.Experiments, &k.Quit)
	}
	all := m.footerKeys()
	if m.opts.ReadOnly {
		// A replay: its own keys instead of actions that cannot act.
		ro := []*component.Binding{all[0]}
		ro = append(ro, m.opts.Mode.Keys...)
		for _, b := range all[1:] {
			if b.Group != "actions" {
				ro = append(ro, b)
			}
		}
		all = ro
	} else if m.watching() {
		// Another cockpit drives: T instead of the actions that wait.
		ro := []*component.Binding{all[0]}
		if m.opts.Driver != nil {
			ro = append(ro, &m.keys.TakeOver)
		}
		for _, b := range all[1:] {
			if b.Group != "actions" || b == &m.keys.Git {
				ro = append(ro, b)
			}
		}
		all = ro
	}
	pairW := func(b *component.Binding) int { return component.HintWidth(b.Help().Key, b.Help().Desc) }
	// Help and quit always fit first, then the log keys; actions fill what
	// is left.
	show := make([]bool, len(all))
	used := -2
	for pass := range 3 {
		for i, kb := range all {
			if !kb.Short && kb != &m.keys.TakeOver || show[i] {
				continue
			}
			group := m.footerLike(kb)
			switch essential := kb == &m.keys.Help || kb == &m.keys.Quit || kb == &m.keys.TakeOver; {
			case pass == 0 && !essential, pass == 1 && group == "actions", pass == 2 && group != "actions":
				continue
			}
			if used+pairW(kb) > width {
				break // keep the footer a prefix of the list, no gaps
			}
			show[i] = true
			used += pairW(kb)
		}
	}
	var b strings.Builder
	for i, kb := range all {
		if !show[i] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString(m.keyHint(kb.Help().Key, kb.Help().Desc, kb))
	}
	return b.String()
}

// keyHint draws one key of a footer: the key, dimmed while b (nil for no
// binding) is unavailable, a space and what the key does, dimmed.
func (m *Model) keyHint(key, desc string, b *component.Binding) string {
	kt := m.styles.Key
	if b != nil && b.Why() != "" {
		kt = m.styles.Dim
	}
	return kt.Render(key) + " " + m.styles.Dim.Render(desc)
}
