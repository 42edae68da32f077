package logtail

import (
	"strconv"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// NoLogText replaces the tok/s series and the log when the session follows
// no server log.
const NoLogText = "no server log followed (start with --log PATH)"

// Panel is the log panel: the Tail, its title line, the filter prompt, and
// its own keys (f follows or pauses, / filters, w wraps: FollowKey,
// FilterKey, WrapKey). Scrolling is the
// cockpit's: it moves whichever panel has the focus (Tail.Scroll).
type Panel struct {
	Tail
	FollowKey, FilterKey, WrapKey component.Binding
	// Covered, when set, says why the log is not on screen ("the git panel
	// is open …"): its keys say so instead of acting. "" when it shows.
	Covered func() string
	// NoLog, when set, reports that no server log is followed (and none
	// has arrived): the keys say so (NoLogText) and the title shows no
	// follow state.
	NoLog func() bool

	input     textinput.Model
	filtering bool
}

// NewPanel returns a log panel keeping capacity lines (DefaultLogLines when
// 0 or less). Its keys ask it why they cannot act: use it by pointer.
func NewPanel(capacity int) *Panel {
	p := &Panel{
		Tail:      New(capacity),
		FollowKey: component.New("log", "f", "follow", "f").InFooter(),
		FilterKey: component.New("log", "/", "filter", "/").InFooter(),
		WrapKey:   component.New("log", "w", "wrap", "w").InFooter(),
	}
	for _, b := range p.Bindings() {
		b.Disabled = p.why
	}
	p.input = textinput.New()
	p.input.Prompt = "/"
	p.input.Placeholder = "filter (enter keeps, esc clears)"
	return p
}

// Bindings implements component.Panel, in the footer's order.
func (p *Panel) Bindings() []*component.Binding {
	return []*component.Binding{&p.FilterKey, &p.FollowKey, &p.WrapKey}
}

// why is why the log's keys cannot act: the log is covered, or none is
// followed.
func (p *Panel) why() string {
	if p.Covered != nil {
		if why := p.Covered(); why != "" {
			return why
		}
	}
	if p.noLog() {
		return NoLogText
	}
	return ""
}

func (p *Panel) noLog() bool { return p.NoLog != nil && p.NoLog() }

// Act implements component.Panel: f pauses or follows, w wraps, / opens
// the filter prompt with the filter as typed.
func (p *Panel) Act(b *component.Binding) tea.Cmd {
	switch b {
	case &p.FollowKey:
		if p.Follow {
			p.Pause()
		} else {
			p.Resume()
		}
	case &p.WrapKey:
		p.Wrap = !p.Wrap
	case &p.FilterKey:
		p.filtering = true
		p.input.SetValue(p.Query)
		p.input.CursorEnd()
		return p.input.Focus()
	}
	return nil
}

// Typing reports whether the filter prompt is open: it then takes every
// key press (Type), so that typing never runs as commands.
func (p *Panel) Typing() bool { return p.filtering }

// Type handles a key press in the filter prompt: esc (or ctrl+c) closes it
// and clears the filter, enter closes it keeping the filter, every other
// key (backspace on an empty filter included) is text. ctrl+c cancels
// rather than quits: one meant for the prompt must not end the session; a
// second one, outside it, quits.
func (p *Panel) Type(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc", "ctrl+c":
		p.filtering = false
		p.input.Blur()
		p.ClearFilter()
		return nil
	case "enter":
		p.filtering = false
		p.input.Blur()
		return nil
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	p.SetFilter(p.input.Value())
	return cmd
}

// Paste types pasted text into the open filter prompt.
func (p *Panel) Paste(msg tea.PasteMsg) tea.Cmd {
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	p.SetFilter(p.input.Value())
	return cmd
}

// ClearFilter drops the filter, and empties the prompt.
func (p *Panel) ClearFilter() {
	p.input.SetValue("")
	p.SetFilter("")
}

// TypeAs makes the prompt what from's is: open or closed, with its text
// (a replay's seek rebuilds the panel and keeps what is being typed).
func (p *Panel) TypeAs(from *Panel) {
	if !from.filtering {
		return
	}
	p.filtering = true
	p.input.SetValue(from.input.Value())
	p.input.CursorEnd()
	p.input.Focus()
}

// SetInputStyles styles the filter prompt.
func (p *Panel) SetInputStyles(is textinput.Styles) { p.input.SetStyles(is) }

// SetInputWidth sets the filter prompt's width in cells.
func (p *Panel) SetInputWidth(w int) { p.input.SetWidth(w) }

// Title is the panel's title line, w cells at most: "log <path>
// follow|paused [wrap]  filter … ----", or, while the filter is typed, the
// prompt.
func (p *Panel) Title(st *style.Styles, w int) string {
	if p.filtering {
		p.input.SetWidth(max(w-4, 1))
		return style.TruncateStyled(p.input.View(), w)
	}
	type part = component.TitlePart
	var tail []part // everything after the path
	if p.NoticeShort != "" {
		tail = append(tail, part{Text: "  " + p.NoticeShort, Tone: st.Warn})
	}
	switch {
	case p.noLog():
		// Nothing is followed: no follow state to show.
	case p.Follow:
		tail = append(tail, part{Text: "  follow", Tone: st.OK})
		if p.Wrap {
			tail = append(tail, part{Text: " wrap", Tone: st.Title})
		}
	default:
		tail = append(tail, part{Text: "  paused", Tone: st.Warn})
		if p.Wrap {
			tail = append(tail, part{Text: " wrap", Tone: st.Title})
		}
		if p.NewLines > 0 {
			tail = append(tail, part{Text: " +" + strconv.FormatInt(p.NewLines, 10) + " new", Tone: st.Warn})
		}
		tail = append(tail, part{Text: " (G follows)", Tone: st.Dim})
	}
	if p.Filter != "" {
		tail = append(tail, part{Text: "  filter ", Tone: st.Dim}, part{Text: p.Query, Tone: st.Accent},
			part{Text: " " + style.Plural(p.Count(), "line") + " (esc clears)", Tone: st.Dim})
	}
	// The state matters more than the path: a long path loses its head
	// (".../logs/sglang.log"), or goes, before the state is cut.
	tailW := 0
	for _, t := range tail {
		tailW += style.Width(t.Text)
	}
	path := ""
	if p.Path != "" {
		room := w - len("log ") - tailW - 2 // keep a little rule
		switch pw := style.Width(p.Path); {
		case pw <= room:
			path = " " + p.Path
		case room >= 12:
			path = " ..." + style.TruncateLeft(p.Path, room-4)
		}
	}
	return component.TitleRule(st, w, "log", path, tail)
}

var _ component.Component = (*Panel)(nil)
