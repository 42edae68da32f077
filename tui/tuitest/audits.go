package tuitest

import (
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// AuditPlainKeys fails t for every binding of bs that cannot be typed as
// a plain key (each has one that is neither esc nor modified, "+" itself
// being plain), and when bs holds fewer than atLeast bindings (the walk
// that collected them is broken). Nothing may depend on tmux passing
// modified keys through or on escape-time to tell alt+x from esc x.
func AuditPlainKeys(t testing.TB, bs []*component.Binding, atLeast int) {
	t.Helper()
	for _, b := range bs {
		name := b.Group + ":" + b.Help().Key
		keys := b.Keys()
		if len(keys) == 0 {
			t.Errorf("%s has no keys", name)
			continue
		}
		plain := false
		for _, k := range keys {
			if k != "esc" && !strings.Contains(k, "+") || k == "+" {
				plain = true
			}
		}
		if !plain {
			t.Errorf("%s has only modified or esc keys: %q", name, keys)
		}
	}
	if len(bs) < atLeast {
		t.Errorf("only %d bindings found: the binding walk is broken", len(bs))
	}
}

// AuditDialogSizes draws d at each of sizes (w cells by h rows) and fails
// t where it does not fit: below 8x5 it must draw no box at all, and at
// every other size the placed box must leave the header and footer rows
// (at most h-2 lines) and no line may be wider than w. name says which
// dialog, in which state, in the failures.
func AuditDialogSizes(t testing.TB, st *style.Styles, name string, d component.Dialog, sizes [][2]int) {
	t.Helper()
	for _, sz := range sizes {
		b := d.View(st, sz[0], sz[1])
		if sz[0] < 8 || sz[1] < 5 {
			if b.Width != 0 || b.Body != nil {
				t.Errorf("%s at %v: a box %+v", name, sz, b)
			}
			continue
		}
		lines, _, _ := component.Place(st, b, sz[0], sz[1])
		if len(lines) > sz[1]-2 {
			t.Errorf("%s at %v: %d lines", name, sz, len(lines))
		}
		for _, l := range lines {
			if w := style.Width(style.StripSGR(l)); w > sz[0] {
				t.Errorf("%s at %v: %q is %d wide", name, sz, l, w)
			}
		}
	}
}
