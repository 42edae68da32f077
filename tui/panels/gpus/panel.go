// Package gpus is the cockpit's GPU panel: one row per GPU from the
// samples (event.GPUSample), abnormal values highlighted, the sampler's
// failure and stale banners above it, the Xid marks on its rows and the
// Xid lines it writes into the log, how GPUs are sampled (the header's
// field, the help screen's lines, the log line when it changes), and its
// key: tab gives it the focus, and with it the cockpit's scrolling keys.
//
// It writes flightdeck's own lines into the log panel's logtail.Tail (an
// Xid, a change of sampler): what they say and how identical Xids are
// grouped is GPU knowledge, the ring they go into is the log's.
package gpus

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/logtail"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// Panel is the GPU panel: the Table, how GPUs are sampled (SetSource,
// HeaderField, SamplingHelp), the Xid lines of the log (ApplyXid), and
// its key, FocusKey (tab), which moves the focus between it and the log.
// While it has the focus (Focused), the cockpit routes its scrolling keys
// to the table (Move, Page, Home, End: component.Cursor).
type Panel struct {
	Table
	FocusKey component.Binding
	// Focused: the table has the focus, not the log (or the panel in its
	// place).
	Focused bool

	width, maxRows int // SetSize's
	source         source
	xidLog         xidLog
}

// NewPanel returns an empty GPU panel. Its key asks it why it cannot act:
// use it by pointer.
func NewPanel() *Panel {
	p := &Panel{FocusKey: component.New("view", "tab", "focus gpus/log", "tab")}
	p.FocusKey.Disabled = p.focusWhy
	return p
}

// Bindings implements component.Panel.
func (p *Panel) Bindings() []*component.Binding { return []*component.Binding{&p.FocusKey} }

// focusWhy is why tab cannot move the focus to the table: it has nothing
// to scroll.
func (p *Panel) focusWhy() string {
	if !p.Scrolls() {
		return "all GPU rows fit on screen; nothing to scroll"
	}
	return ""
}

// Act implements component.Panel: tab moves the focus between the table
// and the log.
func (p *Panel) Act(b *component.Binding) tea.Cmd {
	if b == &p.FocusKey {
		p.Focused = !p.Focused
	}
	return nil
}

// SetSize gives the table width cells and up to maxRows GPU rows under
// its header row.
func (p *Panel) SetSize(width, maxRows int) { p.width, p.maxRows = width, maxRows }

// View appends the table's header row and its GPU rows to out, at the
// size SetSize gave; rows are cached until the styles' generation
// (st.Gen), the data or the layout changes. A table that does not fit
// says which rows show, how many abnormal ones do not, and how to scroll.
func (p *Panel) View(out []string, st *style.Styles) []string {
	return p.render(out, st, p.width, p.maxRows, p.Focused)
}

// ApplyXid applies an Xid reported at data time at: a mark on its GPU's
// row (critical ones for the rest of the session, the others until the
// next launch, see xidMark), and a line of log at its place among the
// server's lines (identical ones within a second share it, see xidLog).
func (p *Panel) ApplyXid(x event.Xid, at time.Time, log *logtail.Tail) {
	p.applyXid(x, at)
	p.xidLog.add(log, x, at)
}

// columnsHelp explains the table's NVML columns and the Xid mark in the
// help screen: the column, what it says.
var columnsHelp = [][2]string{
	{"rx/tx", "PCIe throughput, MiB/s (NVML or the agent, with --pcie)"},
	{"procs", "processes using the GPU and the largest one (NVML or the agent); \"0, 78G held\": memory no process holds"},
	{"Xid", "an Xid NVML reported leads the Xid/throttle column: a critical one (red) stays for the session, " +
		"the others clear at the next launch or 10 min after the GPU's latest; \"Xid 79 +2\": two more Xids of any code, each in the log; nvidia-smi reports none"},
}

// ColumnsHelp is the help screen's section on what the table's NVML
// columns and the Xid mark say, in w cells: its title, then each column
// and its description, wrapped under it.
func ColumnsHelp(st *style.Styles, w int) []string {
	out := []string{st.Accent.Render(style.Truncate("GPU table", w))}
	for _, c := range columnsHelp {
		for r, row := range style.Wrap(c[1], max(w-len("rx/tx  "), 20)) {
			if r == 0 {
				out = append(out, st.Key.Render(style.PadRight(c[0], 5))+"  "+row)
			} else {
				out = append(out, "       "+row)
			}
		}
	}
	return out
}

// XidState is how many GPUs hold an Xid mark and how many groups of
// identical Xids a log line still counts: both are bounded (MaxXidIndex,
// MaxXidBusMarks, MaxXidGroups) whatever the Xids name.
func (p *Panel) XidState() (marks, groups int) { return len(p.xids), len(p.xidLog.groups) }

var _ component.Component = (*Panel)(nil)
