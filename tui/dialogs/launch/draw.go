package launch

import (
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// View implements component.Dialog: the fields, then the plan (or why
// there is none), then the relaunch question while it is asked; a plan
// taller than the screen loses its middle lines.
func (f *Form) View(st *style.Styles, w, h int) component.Box {
	if component.TooSmall(w, h) {
		return component.Box{} // no room for a box (component.Place draws none)
	}
	title := "launch"
	if who, running, _ := f.h.Server(); running {
		title = "relaunch " + who
	}
	iw := min(w-4, 116)
	return component.Box{Title: title, Frame: style.Accent, Body: f.render(st, iw, h-4), Width: iw}
}

// question is the relaunch question.
func (f *Form) question() string {
	if who, running, _ := f.h.Server(); running {
		return "Relaunch: kills " + who + ", waits for GPU memory, then launches." + f.h.Note()
	}
	return "Launch: kills the running server first, if there is one, and waits for its GPU memory." + f.h.Note()
}

// render is the form's box content for inner width iw and at most maxH
// lines.
func (f *Form) render(st *style.Styles, iw, maxH int) []string {
	lw := len("hypothesis") + 1 // label column: the longest label and a space
	var top []string
	for i := range numFields {
		mark := "  "
		lt := st.Dim
		if i == f.focus {
			mark, lt = "> ", st.Accent
		}
		head := lt.Render(mark + style.PadRight(fieldLabels[i], lw))
		vw := iw - 2 - lw
		var val string
		switch i {
		case fieldPreset, fieldProfile:
			list, idx := f.presets, f.preset
			if i == fieldProfile {
				list, idx = f.profiles, f.profile
			}
			val = component.Chooser(st, list, idx, vw, i == f.focus)
		default:
			in := &f.inputs[i]
			in.SetWidth(max(vw-1, 1))
			val = style.TruncateStyled(in.View(), vw)
		}
		top = append(top, head+val)
	}

	// The plan: command line (wrapped), env diff, or the error.
	var body []string
	if f.planErr != "" {
		body = append(body, "", st.Crit.Render(style.Truncate("cannot launch:", iw)))
		for _, l := range style.Wrap(f.planErr, iw-2) {
			body = append(body, "  "+st.Crit.Render(l))
		}
	} else {
		body = append(body, "", st.Title.Render("command"))
		for _, l := range style.Wrap(sanitize.String(f.plan.CommandLine), iw-2) {
			body = append(body, "  "+l)
		}
		body = append(body, "", st.Title.Render("env")+st.Dim.Render(" vs the last launch"))
		switch {
		case f.plan.EnvDiff == nil:
			body = append(body, "  "+st.Dim.Render("no earlier launch to compare with"))
		case len(f.plan.EnvDiff) == 0:
			body = append(body, "  "+st.Dim.Render("same env as the last launch"))
		}
		for _, c := range f.plan.EnvDiff {
			body = append(body, "  "+envChange(st, c, iw-2))
		}
		if line, moved := f.h.Commit(); line != "" {
			tone := st.Dim
			if moved {
				tone = st.Warn
			}
			body = append(body, "", st.Title.Render("commit")+st.Dim.Render(" vs the last launch"), "  "+tone.Render(style.Truncate(line, iw-2)))
		}
	}
	var tail []string
	if f.confirming {
		tail = append(tail, "")
		q := style.Wrap(f.question()+"  y/N", iw)
		for i, l := range q {
			if i == len(q)-1 {
				l = strings.TrimSuffix(l, "y/N")
				tail = append(tail, st.Warn.Render(l)+st.Key.Render("y/N"))
				continue
			}
			tail = append(tail, st.Warn.Render(l))
		}
	}
	// Too tall: the plan's middle goes first, with a note of how much.
	if room := maxH - len(top) - len(tail); len(body) > room {
		cut := len(body) - room + 1
		keep := max(room-1, 0)
		body = append(body[:keep:keep], st.Dim.Render(style.Truncate("  ... "+strconv.Itoa(cut)+" more lines (widen the terminal)", iw)))
		if room <= 0 {
			body = nil
		}
	}
	out := append(top, body...)
	return append(out, tail...)
}

// envChange renders one env difference: "+ NCCL_PROTO=LL",
// "- NCCL_DEBUG=INFO", "~ NCCL_NTHREADS 256 -> 512".
func envChange(st *style.Styles, c sessions.EnvChange, w int) string {
	name := sanitize.String(c.Name)
	o, n := sanitize.String(c.Old), sanitize.String(c.New)
	switch {
	case c.Added:
		return st.OK.Render(style.Truncate("+ "+name+"="+n, w))
	case c.Removed:
		return st.Crit.Render(style.Truncate("- "+name+"="+o, w))
	}
	return st.Warn.Render(style.Truncate("~ "+name+" "+o+" -> "+n, w))
}
