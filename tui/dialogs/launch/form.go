// Package launch is the launch form (L), pushed on the cockpit's overlay
// stack: the preset and the env profile chosen with left/right, the
// model, draft, tp, port and extra flags typed, and the hypothesis of the
// experiment the launch starts; below them the plan of what would run
// (the exact command line, the env diff against the last launch, the
// commit against the last launch's), recomputed on every change with
// Control.Plan, which does no I/O. Enter launches, after asking when it
// replaces a running server (the question is part of the form's box);
// the launch itself is the cockpit's (Host.Launch, in a tea.Cmd).
package launch

import (
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// ID is the launch form's name on the overlay stack.
const ID = "launch"

// Control is what the form reads of the server control (the cockpit's
// ServerControl); none of it does I/O: it is called from Update.
type Control interface {
	// Request is the form's starting point.
	Request() sessions.LaunchRequest
	// Presets lists the presets the form offers.
	Presets() []string
	// Profiles lists the env profiles the form offers.
	Profiles() []string
	// Plan resolves a request: the exact command line and the env diff
	// against the last launch, or why it cannot launch.
	Plan(sessions.LaunchRequest) (sessions.Plan, error)
}

// Host is what the form needs of the cockpit; the root sets every field.
type Host struct {
	// Ctl plans the launches.
	Ctl Control
	// Server names the running server ("sglang pid 4123") and says
	// whether one runs and whether its state is known at all (a status
	// arrived).
	Server func() (who string, running, known bool)
	// Unavailable is why a launch cannot start now, "" when it can; enter
	// asks again (the cockpit may have changed while the form was open).
	Unavailable func() string
	// Note is what the relaunch question adds ("A benchmark b1 is
	// running: it is stopped first."), "" for nothing.
	Note func() string
	// Commit compares the checkout with the last launch's ("a6d51c0 ->
	// 65b09bf (HEAD moved since the last launch)"); moved is set for any
	// difference, line is "" when either side is unknown.
	Commit func() (line string, moved bool)
	// Launch starts the plan at once (no server to replace); Relaunch,
	// confirmed with y, stops what would fail into the kill first. The
	// hypothesis goes to the experiment the launch starts.
	Launch, Relaunch func(plan sessions.Plan, hypothesis string) tea.Cmd
	// Flash answers in the status line until the next key.
	Flash func(text string, tone style.Token)
	// Inputs are the text fields' styles.
	Inputs func() textinput.Styles
}

// Form fields, in order: two choosers, then text inputs.
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

// Form is the launch form: a component.Dialog (and component.Paster).
// Use it by pointer (Open).
type Form struct {
	h                 Host
	presets, profiles []string
	preset, profile   int                        // indices; -1 when the list is empty
	inputs            [numFields]textinput.Model // model, draft, tp, port, extra, hypothesis (the others unused)
	focus             int

	plan       sessions.Plan
	planErr    string // sanitised; "" when the plan is valid
	confirming bool   // enter was pressed: waiting for y/N
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

// Open returns the form filled from Control.Request, its plan computed,
// the focus on the preset, and its first command; the caller pushes it.
func Open(h Host) (*Form, tea.Cmd) {
	ctl := h.Ctl
	req := ctl.Request()
	f := &Form{h: h}
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
		in.SetStyles(h.Inputs())
		in.SetValue(vals[i])
		in.CursorEnd()
		f.inputs[i] = in
	}
	f.replan()
	return f, f.setFocus(fieldPreset)
}

// ID implements component.Dialog.
func (f *Form) ID() string { return ID }

// Focused is the label of the field with the focus ("preset", "extra").
func (f *Form) Focused() string { return fieldLabels[f.focus] }

// Confirming reports whether the form asks before (re)launching: y
// launches, any other key goes back to the form.
func (f *Form) Confirming() bool { return f.confirming }

// SetInputStyles restyles the text fields (the palette changed).
func (f *Form) SetInputStyles(is textinput.Styles) {
	for i := fieldModel; i < numFields; i++ {
		f.inputs[i].SetStyles(is)
	}
}

// request is the form's LaunchRequest, or why the numbers are not numbers.
func (f *Form) request() (sessions.LaunchRequest, string) {
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
func (f *Form) hypothesis() string { return strings.TrimSpace(f.inputs[fieldHypothesis].Value()) }

// replan recomputes the plan from the fields (Control.Plan is pure).
func (f *Form) replan() {
	req, bad := f.request()
	if bad != "" {
		f.plan, f.planErr = sessions.Plan{Request: req}, bad
		return
	}
	p, err := f.h.Ctl.Plan(req)
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

func (f *Form) setFocus(i int) tea.Cmd {
	f.focus = (i + numFields) % numFields
	return component.FocusInput(f.inputs[fieldModel:], f.focus-fieldModel)
}

// Key implements component.Dialog: tab, up and down move between the
// fields, left and right choose a preset or profile, enter launches (or
// asks first: then y launches, ctrl+c closes the form, any other key goes
// back to it), esc cancels; other keys are the focused field's text.
func (f *Form) Key(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	k := msg.String()
	if f.confirming {
		f.confirming = false
		if k == "y" {
			return f.h.Relaunch(f.plan, f.hypothesis()), true
		}
		return nil, k == "ctrl+c"
	}
	switch k {
	case "esc", "ctrl+c":
		f.h.Flash("launch cancelled", style.Dim)
		return nil, true
	case "tab", "down":
		return f.setFocus(f.focus + 1), false
	case "shift+tab", "up":
		return f.setFocus(f.focus - 1), false
	case "enter":
		if f.planErr != "" {
			f.h.Flash("cannot launch: "+f.planErr, style.Crit)
			return nil, false
		}
		if why := f.h.Unavailable(); why != "" {
			f.h.Flash(why, style.Warn)
			return nil, false
		}
		// Launching is not destructive; replacing a server (or perhaps
		// replacing one: no status yet) asks first.
		if _, running, known := f.h.Server(); running || !known {
			f.confirming = true
			return nil, false
		}
		return f.h.Launch(f.plan, f.hypothesis()), true
	}
	switch f.focus {
	case fieldPreset, fieldProfile:
		list, idx := f.presets, &f.preset
		if f.focus == fieldProfile {
			list, idx = f.profiles, &f.profile
		}
		if len(list) == 0 {
			return nil, false
		}
		switch k {
		case "left", "h":
			*idx = (*idx - 1 + len(list)) % len(list)
		case "right", "l", "space":
			*idx = (*idx + 1) % len(list)
		default:
			return nil, false
		}
		f.replan()
		return nil, false
	}
	return f.input(msg), false
}

// Paste implements component.Paster: pasted text goes to the focused
// text field, not to the relaunch question.
func (f *Form) Paste(msg tea.PasteMsg) tea.Cmd {
	if f.confirming {
		return nil
	}
	return f.input(msg)
}

// input sends a key or paste to the focused text field and replans when
// its value changed.
func (f *Form) input(msg tea.Msg) tea.Cmd {
	if f.focus < fieldModel {
		return nil
	}
	in := &f.inputs[f.focus]
	before := in.Value()
	var cmd tea.Cmd
	*in, cmd = in.Update(msg)
	if in.Value() != before {
		f.replan()
	}
	return cmd
}

// Help implements component.Dialog.
func (f *Form) Help() []component.Hint {
	if f.confirming {
		verb := "launch"
		if _, running, _ := f.h.Server(); running {
			verb = "relaunch"
		}
		return []component.Hint{{Key: "y", Desc: verb}, {Key: "n/esc", Desc: "back to the form"}}
	}
	return []component.Hint{{Key: "enter", Desc: "launch"}, {Key: "tab/up/down", Desc: "field"}, {Key: "left/right", Desc: "choose"}, {Key: "esc", Desc: "cancel"}}
}
