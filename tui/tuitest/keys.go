package tuitest

import (
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/tui/component"
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
