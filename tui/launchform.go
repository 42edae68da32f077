package tui

import (
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions"
)

// Launch form fields, in order: two choosers, then text inputs.
const (
	fieldPreset = iota
	fieldProfile
	fieldModel
	fieldDraft
	fieldTP
	fieldPort
	fieldExtra
	// fieldHypothesis is the hypothesis of the experiment the launch
	// starts (the journal's; not part of the launch request).
	fieldHypothesis
	numFields
)

var fieldLabels = [numFields]string{"preset", "profile", "model", "draft", "tp", "port", "extra", "hypothesis"}

// launchForm is the L overlay: preset and profile chosen with left/right,
// model, tp, port and extra flags typed; below them the plan of what would
// run, recomputed (Control.Plan, no I/O) on every change.
type launchForm struct {
	presets, profiles []string
	preset, profile   int                        // indices; -1 when the list is empty
	inputs            [numFields]textinput.Model // model, tp, port, extra (others unused)
	focus             int

	plan       sessions.Plan
	planErr    string // sanitised; "" when the plan is valid
	confirming bool   // Enter was pressed: waiting for y/N
}

// choices returns names with want first if it is not among them (a
// request may name what the list lacks, e.g. an adopted launch's preset).
func choices(names []string, want string) ([]string, int) {
	out := slices.Clone(names)
	if want == "" {
		return out, min(0, len(out)-1) // 0, or -1 when empty
	}
	if i := slices.Index(out, want); i >= 0 {
		return out, i
	}
	return append([]string{want}, out...), 0
}

// openLaunch opens the form from Control.Request.
func (m *Model) openLaunch() {
	ctl := m.ctl
	req := ctl.Request()
	f := &launchForm{}
	f.presets, f.preset = choices(ctl.Presets(), req.Preset)
	profile := req.Profile
	if profile == "" && slices.Contains(ctl.Profiles(), "none") {
		profile = "none"
	}
	f.profiles, f.profile = choices(ctl.Profiles(), profile)
	vals := [numFields]string{fieldModel: req.Model, fieldDraft: req.Draft, fieldExtra: req.Extra}
	if req.TP > 0 {
		vals[fieldTP] = strconv.Itoa(req.TP)
	}
	if req.Port > 0 {
		vals[fieldPort] = strconv.Itoa(req.Port)
	}
	placeholders := [numFields]string{
		fieldModel:      "model path or name",
		fieldDraft:      "EAGLE draft model (sglang-eagle3)",
		fieldTP:         "default",
		fieldPort:       "the preset's default",
		fieldExtra:      "more server flags, e.g. --mem-fraction-static 0.85",
		fieldHypothesis: "what do you expect from this launch? (optional)",
	}
	for i := fieldModel; i < numFields; i++ {
		in := textinput.New()
		in.Prompt = ""
		in.Placeholder = placeholders[i]
		in.SetStyles(m.inputStyles())
		in.SetValue(vals[i])
		in.CursorEnd()
		f.inputs[i] = in
	}
	m.form = f
	m.modal = modalLaunch
	m.replan()
}

// request is the form's LaunchRequest, or why the numbers are not numbers.
func (f *launchForm) request() (sessions.LaunchRequest, string) {
	var r sessions.LaunchRequest
	if f.preset >= 0 {
		r.Preset = f.presets[f.preset]
	}
	if f.profile >= 0 {
		r.Profile = f.profiles[f.profile]
	}
	r.Model = strings.TrimSpace(f.inputs[fieldModel].Value())
	r.Draft = strings.TrimSpace(f.inputs[fieldDraft].Value())
	r.Extra = f.inputs[fieldExtra].Value()
	for _, n := range []struct {
		field int
		dst   *int
	}{{fieldTP, &r.TP}, {fieldPort, &r.Port}} {
		s := strings.TrimSpace(f.inputs[n.field].Value())
		if s == "" {
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return r, fieldLabels[n.field] + ": " + strconv.Quote(s) + " is not a whole number"
		}
		*n.dst = v
	}
	return r, ""
}

// hypothesis is the typed hypothesis of the experiment the launch starts.
func (f *launchForm) hypothesis() string { return strings.TrimSpace(f.inputs[fieldHypothesis].Value()) }

// replan recomputes the plan from the fields (Control.Plan is pure).
func (m *Model) replan() {
	f := m.form
	req, bad := f.request()
	if bad != "" {
		f.plan, f.planErr = sessions.Plan{Request: req}, bad
		return
	}
	p, err := m.ctl.Plan(req)
	f.plan, f.planErr = p, ""
	if err != nil {
		// errors.Join puts one problem per line: "; " between them,
		// each sanitised (a newline would show as \x0a).
		lines := strings.Split(err.Error(), "\n")
		for i, l := range lines {
			lines[i] = sanitize.String(l)
		}
		f.planErr = strings.Join(lines, "; ")
	}
}

func (f *launchForm) setFocus(i int) tea.Cmd {
	f.focus = (i + numFields) % numFields
	var cmd tea.Cmd
	for j := fieldModel; j < numFields; j++ {
		if j == f.focus {
			cmd = f.inputs[j].Focus()
		} else {
			f.inputs[j].Blur()
		}
	}
	return cmd
}

// launchKey handles a key while the form is open: every key goes to it.
func (m *Model) launchKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	f := m.form
	k := msg.String()
	if f.confirming {
		f.confirming = false
		if k == "y" {
			m.closeForm()
			stop := m.bench.StopFirst()
			launch := m.startLaunch(f.plan, f.hypothesis())
			return m, func() tea.Msg { stop(); return launch() }
		}
		if k == "ctrl+c" {
			m.closeForm()
		}
		return m, nil
	}
	switch k {
	case "esc", "ctrl+c":
		m.closeForm()
		m.flash("launch cancelled", style.Dim)
		return m, nil
	case "tab", "down":
		return m, f.setFocus(f.focus + 1)
	case "shift+tab", "up":
		return m, f.setFocus(f.focus - 1)
	case "enter":
		if f.planErr != "" {
			m.flash("cannot launch: "+f.planErr, style.Crit)
			return m, nil
		}
		if why := launchUnavailable(m); why != "" {
			m.flash(why, style.Warn)
			return m, nil
		}
		// Launching is not destructive; replacing a server (or perhaps
		// replacing one: no status yet) asks first.
		if m.srv.running() || !m.srv.hasSt {
			f.confirming = true
			return m, nil
		}
		m.closeForm()
		return m, m.startLaunch(f.plan, f.hypothesis())
	}
	switch f.focus {
	case fieldPreset, fieldProfile:
		list, idx := f.presets, &f.preset
		if f.focus == fieldProfile {
			list, idx = f.profiles, &f.profile
		}
		if len(list) == 0 {
			return m, nil
		}
		switch k {
		case "left", "h":
			*idx = (*idx - 1 + len(list)) % len(list)
		case "right", "l", "space":
			*idx = (*idx + 1) % len(list)
		default:
			return m, nil
		}
		m.replan()
		return m, nil
	}
	return m, m.formInput(msg)
}

// formInput sends a key or paste to the focused text field and replans
// when its value changed.
func (m *Model) formInput(msg tea.Msg) tea.Cmd {
	f := m.form
	if f.focus < fieldModel {
		return nil
	}
	in := &f.inputs[f.focus]
	before := in.Value()
	var cmd tea.Cmd
	*in, cmd = in.Update(msg)
	if in.Value() != before {
		m.replan()
	}
	return cmd
}

func (m *Model) closeForm() {
	m.modal, m.form = modalNone, nil
}

// confirmText is the relaunch question.
func (m *Model) confirmText() string {
	if m.srv.running() {
		return "Relaunch: kills " + m.srv.who() + ", waits for GPU memory, then launches." + m.bench.BenchNote()
	}
	return "Launch: kills the running server first, if there is one, and waits for its GPU memory." + m.bench.BenchNote()
}

// renderLaunch is the form's box content for inner width iw and at most
// maxH lines.
func (m *Model) renderLaunch(iw, maxH int) []string {
	st := &m.styles
	f := m.form
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
		if line, moved := m.headVsLastLaunch(); line != "" {
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
		q := style.Wrap(m.confirmText()+"  y/N", iw)
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

// headVsLastLaunch compares the checkout now with what the last launched
// experiment's fingerprint recorded: HEAD ("a6d51c0 -> 65b09bf (HEAD
// moved since the last launch)") and whether tracked files had
// uncommitted changes ("same commit (a6d51c0), but 1 file has uncommitted
// changes now (it was clean)"); moved is set for any difference. "" when
// either side is unknown. An env diff alone would hide the change this
// tool exists to catch.
func (m *Model) headVsLastLaunch() (line string, moved bool) {
	now := m.headShort
	if now == "" {
		return "", false
	}
	exps := m.exp.ledger.Experiments()
	for i := len(exps) - 1; i >= 0; i-- {
		e := &exps[i]
		if e.StartedBy != event.TriggerLaunch {
			continue
		}
		if e.Fingerprint == nil || e.Fingerprint.Git == nil || e.Fingerprint.Git.Head == "" {
			return "", false
		}
		g := e.Fingerprint.Git
		then := sanitize.String(g.Head)
		if !strings.HasPrefix(then, now) {
			return git.ShortID(then) + arrow + now + " (HEAD moved since the last launch)", true
		}
		wasDirty, changed := g.PatchBytes > 0, m.headChanged
		switch {
		case changed > 0 && !wasDirty:
			return "same commit (" + now + "), but " + style.Plural(changed, "file") + " with uncommitted changes now (it was clean)", true
		case changed == 0 && wasDirty:
			return "same commit (" + now + "), but no uncommitted changes now (it had some)", true
		case changed > 0:
			return "same commit (" + now + "); uncommitted changes then and now (journal show compares the patches)", false
		}
		return "same commit as the last launch (" + now + ")", false
	}
	return "", false
}
