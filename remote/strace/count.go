package strace

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Processes returns every process of the trace, in the order first seen.
func (t *Trace) Processes() []*Process {
	return append([]*Process(nil), t.all...)
}

// Started returns the processes started in [from, to) — each one a fork
// (or the traced command itself) whose Start is in the window, whether it
// then executed a program or not (a subshell) — in the order first seen.
// A zero to is no upper bound.
func (t *Trace) Started(from, to time.Time) []*Process {
	var out []*Process
	for _, p := range t.all {
		if p.Start.Before(from) || (!to.IsZero() && !p.Start.Before(to)) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Descendants returns the processes below pid (its children, theirs, …),
// in the order first seen.
func (t *Trace) Descendants(pid int) []*Process {
	below := map[*Process]bool{}
	var out []*Process
	for _, p := range t.all { // a child is always seen after its parent forked it
		if p.Parent == 0 {
			continue
		}
		if par := t.parentOf(p); par != nil && (par.PID == pid || below[par]) {
			below[p] = true
			out = append(out, p)
		}
	}
	return out
}

// parentOf is the process that forked p: the last one with that pid first
// seen before p.
func (t *Trace) parentOf(p *Process) *Process {
	var par *Process
	for _, q := range t.all {
		if q == p {
			break
		}
		if q.PID == p.Parent {
			par = q
		}
	}
	return par
}

// Group is the processes of one program in a Summary.
type Group struct {
	Program string // the path executed last, or "(fork, no exec) of PROGRAM"
	Count   int
	// Commands are the distinct command shapes (Shape) with their counts,
	// most frequent first.
	Commands []Counted
}

// Counted is a command shape, how many processes ran it, and the first
// command line of that shape.
type Counted struct {
	Shape   string
	Count   int
	Example string
}

// digits are what Shape replaces.
var digits = regexp.MustCompile(`[0-9]+`)

// Shape is a command line with every run of digits as N and a word
// repeated in a row written once, followed by "...": the commands a poll
// repeats with another offset, pid, temporary name or list of /proc
// entries are one shape.
func Shape(line string) string {
	words := strings.Split(digits.ReplaceAllString(line, "N"), " ")
	out := make([]string, 0, len(words))
	for i, w := range words {
		if i > 0 && w == words[i-1] && w != "" {
			if out[len(out)-1] != "..." {
				out = append(out, "...")
			}
			continue
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// Groups groups ps by the program each executed last (a command line
// says which it exec'd first when it exec'd more than one), and within a
// program by command Shape; a process that only forked is grouped under
// the program of its nearest ancestor that ran one, found in all (nil:
// "?"). Most processes first.
func Groups(ps []*Process, all *Trace) []Group {
	byProg := map[string]*Group{}
	shapes := map[string]map[string]*Counted{}
	for _, p := range ps {
		prog, line := "", ""
		if len(p.Execs) > 0 {
			e := p.Execs[len(p.Execs)-1]
			prog, line = e.Path, ArgvLine(e.Argv, e.Truncated)
			if len(p.Execs) > 1 {
				// A shell that exec'd its last command: the shell's
				// command line says who ran it.
				first := p.Execs[0]
				line += "   (exec'd by " + ArgvLine(first.Argv, first.Truncated) + ")"
			}
		} else {
			parent := "?"
			if all != nil {
				// The nearest ancestor that runs a program: a subshell's
				// subshell is the script's.
				for par := all.parentOf(p); par != nil; par = all.parentOf(par) {
					if len(par.Execs) > 0 {
						parent = path.Base(par.Execs[len(par.Execs)-1].Path)
						break
					}
				}
			}
			prog, line = "(fork, no exec) of "+parent, "(subshell)"
		}
		g := byProg[prog]
		if g == nil {
			g = &Group{Program: prog}
			byProg[prog] = g
			shapes[prog] = map[string]*Counted{}
		}
		g.Count++
		sh := Shape(line)
		c := shapes[prog][sh]
		if c == nil {
			c = &Counted{Shape: sh, Example: line}
			shapes[prog][sh] = c
		}
		c.Count++
	}
	var out []Group
	for prog, g := range byProg {
		for _, c := range shapes[prog] {
			g.Commands = append(g.Commands, *c)
		}
		sort.Slice(g.Commands, func(i, j int) bool {
			a, b := g.Commands[i], g.Commands[j]
			return a.Count > b.Count || (a.Count == b.Count && a.Shape < b.Shape)
		})
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Count > out[j].Count || (out[i].Count == out[j].Count && out[i].Program < out[j].Program)
	})
	return out
}

// maxLine is how much of one command line Summary shows.
const maxLine = 400

// Summary is ps as a report for a failing test: the count, then per
// program its count and every command shape with its count and, when it
// differs, its first command line ("e.g."); then the trees they form
// (Roots), by the command that started each.
func Summary(ps []*Process, all *Trace) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d processes started", len(ps))
	if len(ps) == 0 {
		return b.String()
	}
	b.WriteString(":\n")
	for _, g := range Groups(ps, all) {
		fmt.Fprintf(&b, "%5d  %s\n", g.Count, g.Program)
		for _, c := range g.Commands {
			fmt.Fprintf(&b, "         %4d  %s\n", c.Count, clipLine(c.Shape))
			if c.Example != c.Shape {
				fmt.Fprintf(&b, "               e.g. %s\n", clipLine(c.Example))
			}
		}
	}
	b.WriteString("by the command each tree of them started from (its first process's first command line):\n")
	for _, r := range Roots(ps, all) {
		fmt.Fprintf(&b, "%5d trees, %4d processes  %s\n", r.Trees, r.Processes, clipLine(r.Shape))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Root is the processes that trees of one command started (Roots).
type Root struct {
	Shape     string // the Shape of the root's first command line
	Trees     int    // how many roots ran it
	Processes int    // the roots and their descendants among ps
}

// Roots groups ps into trees — a root is a process of ps whose parent
// is not in ps (an SSH session's shell, whose sshd or in-process server
// was there before) — and the trees by the Shape of their root's first
// command line (a shell that exec'd its last command still says which
// script it ran), most processes first. all gives the parents.
func Roots(ps []*Process, all *Trace) []Root {
	in := map[*Process]bool{}
	for _, p := range ps {
		in[p] = true
	}
	rootOf := map[*Process]*Process{}
	var find func(p *Process) *Process
	find = func(p *Process) *Process {
		if r, ok := rootOf[p]; ok {
			return r
		}
		r := p
		if all != nil {
			if par := all.parentOf(p); par != nil && in[par] && par != p {
				r = find(par)
			}
		}
		rootOf[p] = r
		return r
	}
	byShape := map[string]*Root{}
	trees := map[string]map[*Process]bool{}
	for _, p := range ps {
		r := find(p)
		line := "(fork, no exec)"
		if len(r.Execs) > 0 {
			line = ArgvLine(r.Execs[0].Argv, r.Execs[0].Truncated)
		}
		sh := Shape(line)
		g := byShape[sh]
		if g == nil {
			g = &Root{Shape: sh}
			byShape[sh] = g
			trees[sh] = map[*Process]bool{}
		}
		g.Processes++
		trees[sh][r] = true
	}
	var out []Root
	for sh, g := range byShape {
		g.Trees = len(trees[sh])
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Processes > out[j].Processes || (out[i].Processes == out[j].Processes && out[i].Shape < out[j].Shape)
	})
	return out
}

// clipLine cuts a command line at maxLine bytes.
func clipLine(l string) string {
	if len(l) > maxLine {
		return l[:maxLine] + " [cut]"
	}
	return l
}

// ArgvLine is argv as one line for a report: words of only letters,
// digits and _@%+=:,./- as they are, others in single quotes as POSIX sh
// reads them, Go-quoted (an escaped, terminal-safe form) when they hold a
// control character, a single quote or bytes that are not UTF-8; with
// " [truncated]" when strace cut it.
func ArgvLine(argv []string, truncated bool) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = quoteWord(a)
	}
	l := strings.Join(words, " ")
	if truncated {
		l += " [truncated]"
	}
	return l
}

// quoteWord quotes one word for ArgvLine.
func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	plain := true
	for _, r := range w {
		if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_@%+=:,./-", r))) {
			plain = false
			break
		}
	}
	if plain {
		return w
	}
	if !utf8.ValidString(w) || strings.ContainsRune(w, '\'') || strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) {
		return strconv.Quote(w)
	}
	return "'" + w + "'"
}
