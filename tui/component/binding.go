package component

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// Binding is one key binding as data (lazygit style): its keys and the
// footer's words for it, the full help's group and description, whether
// the footer lists it, why it cannot act right now, and whether it asks
// before acting.
type Binding struct {
	key.Binding
	// Group is the full help's column: "log", "view", "git", "actions",
	// "replay".
	Group string
	// Long is the full help's (?) one-line description; "" is the footer's
	// short one.
	Long string
	// Short lists the binding in the footer. When the footer is too
	// narrow, "actions" bindings are dropped first.
	Short bool
	// Disabled says why the key cannot act now, "" when it can; nil means
	// always available. A key that cannot act puts the reason in the status
	// line instead of being silently ignored, and is dimmed in the footer
	// and the full help. It does no I/O: it is called from Update and View.
	Disabled func() string
	// Dangerous keys change the host in a way that is hard to take back
	// (kill the server, check out another commit, drop a stash, take the
	// host over): they open a Confirm dialog, and only its y acts.
	Dangerous bool
}

// New returns a binding of group with the footer's words help (the keys as
// shown) and desc, matching keys.
func New(group, help, desc string, keys ...string) Binding {
	return Binding{Binding: key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc)), Group: group}
}

// InFooter returns b marked for the footer (Short).
func (b Binding) InFooter() Binding {
	b.Short = true
	return b
}

// Why is why b cannot act now, "" when it can.
func (b *Binding) Why() string {
	if b.Disabled == nil {
		return ""
	}
	return b.Disabled()
}

// Desc is the full help's description: Long, else the footer's words.
func (b *Binding) Desc() string {
	if b.Long != "" {
		return b.Long
	}
	return b.Help().Desc
}

// Panel is a part of the cockpit's screen that owns its state, its keys
// and their help: the cockpit gives it the presses its bindings match, and
// it acts on them.
type Panel interface {
	// Bindings are the panel's keys, in the footer's order.
	Bindings() []*Binding
	// Act performs b, one of Bindings, that can act (b.Why() is "").
	Act(b *Binding) tea.Cmd
}
