package git

import (
	"strings"

	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Footer is the cockpit's footer while the panel has the screen, width
// cells at most: the cockpit's help key, the panel's keys, its own toggle
// key with esc ("g/esc close") and quit; keys that cannot act are dimmed
// and, when the line is too narrow, the less used keys go first.
func (p *Panel) Footer(st *style.Styles, width int, help, toggle, quit *component.Binding) string {
	type item struct {
		key, desc string
		b         *component.Binding
		prio      int // lower stays longer
	}
	items := []item{{help.Help().Key, help.Help().Desc, help, 0}}
	prio := map[*component.Binding]int{&p.CheckoutKey: 1, &p.StashKey: 2, &p.UndoKey: 3, &p.RevertKey: 4, &p.MarkKey: 5,
		&p.PopKey: 6, &p.ApplyKey: 7, &p.DropKey: 8, &p.SnapshotsKey: 9, &p.BisectKey: 10}
	for _, b := range p.Bindings() {
		items = append(items, item{b.Help().Key, b.Help().Desc, b, prio[b]})
	}
	items = append(items, item{toggle.Help().Key + "/esc", "close", nil, 0}, item{quit.Help().Key, quit.Help().Desc, quit, 0})
	show := make([]bool, len(items))
	used := -2
	for pr := 0; pr <= 10; pr++ {
		for i, it := range items {
			if it.prio != pr {
				continue
			}
			if pw := component.HintWidth(it.key, it.desc); used+pw <= width {
				show[i], used = true, used+pw
			}
		}
	}
	var b strings.Builder
	for i, it := range items {
		if !show[i] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		kt := st.Key
		if it.b != nil && it.b.Why() != "" {
			kt = st.Dim
		}
		b.WriteString(kt.Render(it.key) + " " + st.Dim.Render(it.desc))
	}
	return b.String()
}
