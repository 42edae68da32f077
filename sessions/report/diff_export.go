package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// WriteDiffMarkdown writes d as Markdown: the same sections as
// WriteDiffText, as tables. Recorded text is sanitised and escaped. It
// returns w's error.
func WriteDiffMarkdown(w io.Writer, d *compare.Diff, opts DiffOptions) error {
	bw := bufio.NewWriter(w)
	f := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	f("# %s vs %s\n\n", mdText(d.A.ID), mdText(d.B.ID))
	f("- A: %s\n- B: %s\n\n", mdText(expTitle(d.A)), mdText(expTitle(d.B)))

	f("## Results\n\n| metric | A %s | B %s | delta | verdict (across launches) |\n|---|---:|---:|---:|---|\n", mdCell(d.A.ID), mdCell(d.B.ID))
	for i := range d.Results {
		r := &d.Results[i]
		f("| %s | %s | %s | %s | %s |\n", mdCell(FormatMetric(r)), mdCell(compare.FormatSummary(r.A, r.Unit)), mdCell(compare.FormatSummary(r.B, r.Unit)), FormatRowDelta(r), mdCell(r.VerdictText()))
	}
	f("\nLaunches: A %s; B %s. %s\n\n", mdText(launchList(d.LaunchesA)), mdText(launchList(d.LaunchesB)), VerdictLegend)

	changed, unknown, same := splitFields(d.Fields)
	f("## Changed (%d of %d fingerprint rows)\n\n", len(changed), len(d.Fields))
	mdFieldTable(bw, changed, "Nothing: the same configuration.")
	if len(unknown) > 0 {
		f("## Not compared: known on one side only (%d)\n\n", len(unknown))
		mdFieldTable(bw, unknown, "")
	}

	f("## Commits\n\n%s\n\n", mdText(rangeTitle(d)))
	if c, ok := d.Culprit(); ok {
		f("**%s**\n\n", mdText(c.Text()))
	}
	if r := d.Range; r != nil {
		mdList := func(title string, items []string, total int) {
			total = max(total, len(items))
			if total == 0 {
				return
			}
			f("%s (%d):\n\n", title, total)
			for _, s := range items {
				f("- %s\n", mdCode(s))
			}
			if total > len(items) {
				f("- ... and %d more\n", total-len(items))
			}
			f("\n")
		}
		mdList("In B, not in A (`git log --oneline A..B`)", r.Ahead, r.AheadTotal)
		mdList("In A, not in B (B is behind)", r.Behind, r.BehindTotal)
		mdList("Files touched", r.Files, r.FilesTotal)
		if r.Err != "" {
			f("Incomplete: %s\n\n", mdText(r.Err))
		}
	}

	f("## A/A noise\n\n")
	if len(d.Noise) == 0 {
		f("Not measured: no configuration has 2 launches with a result (R relaunches one).\n\n")
	} else {
		f("| configuration | launches | metric | range | spread |\n|---|---:|---|---|---:|\n")
		for _, n := range d.Noise {
			f("| %s | %d | %s | %s–%s | %s |\n", mdCell(n.Config), n.Launches, mdCell(n.Metric), fmtNum(n.Lo), fmtNum(n.Hi), compare.FormatNoise(n.Spread))
		}
		f("\n")
	}
	if opts.All {
		f("## Unchanged (%d)\n\n", len(same))
		mdFieldTable(bw, same, "None.")
	} else if len(same) > 0 {
		f("%s unchanged (not listed).\n", plural(len(same), "row"))
	}
	return bw.Flush()
}

func mdFieldTable(w io.Writer, rows []compare.FieldRow, empty string) {
	if len(rows) == 0 {
		if empty != "" {
			fmt.Fprintf(w, "%s\n\n", empty)
		}
		return
	}
	fmt.Fprintf(w, "| group | name | A | B |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", mdCell(r.Group), mdCell(r.Name), mdCell(FieldValue(r.A)), mdCell(FieldValue(r.B)))
	}
	fmt.Fprintln(w)
}

// DiffJSONVersion is the version of the JSON form of a Diff: 2 made each
// result's verdict an object (JSONVerdict) and added the culprit line.
const DiffJSONVersion = 2

// JSONDiff is the JSON form of a Diff (`flightdeck journal diff --format
// json`). Numbers are finite; a side without a value has n 0.
type JSONDiff struct {
	Version   int              `json:"version"` // DiffJSONVersion
	A         JSONExpRef       `json:"a"`
	B         JSONExpRef       `json:"b"`
	LaunchesA []string         `json:"launches_a"` // experiment ids
	LaunchesB []string         `json:"launches_b"`
	Results   []JSONResultRow  `json:"results"`
	Fields    []FieldRowJSON   `json:"fields"` // changed first; unchanged ones too unless folded (DiffOptions.All false leaves them out)
	Folded    int              `json:"folded,omitempty"`
	Range     *JSONCommitRange `json:"range,omitempty"`
	RangeNote string           `json:"range_note"`
	// Culprit places the change along the range by the measurements of
	// the sides' class (compare.Diff.Culprit); absent without a range.
	Culprit *JSONCulprit   `json:"culprit,omitempty"`
	Noise   []JSONNoiseRow `json:"noise,omitempty"`
}

// JSONCulprit is a compare.Culprit.
type JSONCulprit struct {
	Text           string   `json:"text"` // the culprit line, as the views write it
	Regression     bool     `json:"regression"`
	Decided        bool     `json:"decided"` // the server-log verdict found a difference
	Good           string   `json:"good"`    // short id of the last commit measured like A
	GoodTokS       float64  `json:"good_tok_s"`
	Bad            string   `json:"bad"` // short id of the first commit measured like B
	BadTokS        float64  `json:"bad_tok_s"`
	MeasuredInside int      `json:"measured_inside"`
	Candidates     int      `json:"candidates"`
	Named          []string `json:"named"` // "sha subject", newest first
	Unmeasured     int      `json:"unmeasured"`
}

// JSONExpRef names an experiment.
type JSONExpRef struct {
	ID     string        `json:"id"`
	Name   string        `json:"name"`
	Config string        `json:"config"` // ConfigName
	Repeat *event.Repeat `json:"repeat,omitempty"`
}

// JSONSummary is a ledger.Summary: median and 95 % interval (null bounds
// when unbounded), in the row's unit.
type JSONSummary struct {
	N          int      `json:"n"`
	Median     float64  `json:"median"`
	Lo         *float64 `json:"lo"`
	Hi         *float64 `json:"hi"`
	PctRange   string   `json:"pct_range"` // benchstat's "±" text without the sign: "1%", "∞"
	Confidence float64  `json:"confidence,omitempty"`
}

// JSONResultRow is a ResultRow.
type JSONResultRow struct {
	Metric        string      `json:"metric"`
	Unit          string      `json:"unit"`
	LowerIsBetter bool        `json:"lower_is_better"`
	A             JSONSummary `json:"a"`
	B             JSONSummary `json:"b"`
	DeltaPct      *float64    `json:"delta_pct"` // B's own median over A's; null when there is none
	// Launches is the Mann–Whitney test over the per-launch values: their
	// medians, delta, p, sizes, and benchmath's warnings. It decides only
	// with 4 launches a side (significant is false otherwise); Verdict is
	// what was decided, and how (verdict.method).
	Launches struct {
		A           JSONSummary `json:"a"`
		B           JSONSummary `json:"b"`
		DeltaPct    *float64    `json:"delta_pct"`
		P           float64     `json:"p"`
		N1          int         `json:"n1"`
		N2          int         `json:"n2"`
		Significant bool        `json:"significant"`
		Warnings    []string    `json:"warnings,omitempty"`
	} `json:"launches"`
	Verdict     JSONVerdict `json:"verdict"`
	NoisePct    *float64    `json:"noise_pct"` // A/A spread over A's configuration's launches; null when unmeasured
	WithinNoise bool        `json:"within_noise"`
}

// FieldRowJSON is a FieldRow.
type FieldRowJSON struct {
	Group   string `json:"group"`
	Name    string `json:"name"`
	A       string `json:"a"`
	B       string `json:"b"`
	Changed bool   `json:"changed"`
	Unknown bool   `json:"unknown"`
}

// JSONCommitRange is a CommitRange with its short ids.
type JSONCommitRange struct {
	event.CommitRange
	FromShort string `json:"from_short"`
	ToShort   string `json:"to_short"`
}

// JSONNoiseRow is a NoiseRow.
type JSONNoiseRow struct {
	Config    string  `json:"config"`
	Launches  int     `json:"launches"` // distinct launches with a value
	Metric    string  `json:"metric"`
	SpreadPct float64 `json:"spread_pct"` // percent of the launches' median
	// Lo and Hi are the smallest and largest launch value, in the
	// metric's unit (tok/s for both noise metrics).
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

func jsonSummary(s ledger.Summary) JSONSummary {
	j := JSONSummary{N: s.N, Median: s.Median, Lo: s.Lo, Hi: s.Hi, Confidence: s.Confidence}
	if s.N > 0 {
		j.PctRange = s.PctRange()
	}
	return j
}

// BuildDiffJSON returns the JSON form of d, its text sanitised; the
// unchanged rows are counted in Folded unless opts.All.
func BuildDiffJSON(d *compare.Diff, opts DiffOptions) *JSONDiff {
	ref := func(x *ledger.Experiment) JSONExpRef {
		return JSONExpRef{ID: sanitize.OneLine(x.ID), Name: sanitize.OneLine(x.Name), Config: compare.ConfigName(x), Repeat: x.Repeat}
	}
	ids := func(xs []*ledger.Experiment) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = sanitize.OneLine(x.ID)
		}
		return out
	}
	j := &JSONDiff{Version: DiffJSONVersion, A: ref(d.A), B: ref(d.B), LaunchesA: ids(d.LaunchesA), LaunchesB: ids(d.LaunchesB),
		RangeNote: sanitize.OneLine(d.RangeNote), Results: []JSONResultRow{}, Fields: []FieldRowJSON{}}
	for i := range d.Results {
		r := &d.Results[i]
		jr := JSONResultRow{Metric: r.Metric, Unit: r.Unit, LowerIsBetter: r.LowerIsBetter, A: jsonSummary(r.A), B: jsonSummary(r.B),
			Verdict: BuildVerdictJSON(r), WithinNoise: r.WithinNoise}
		if p, ok := r.DeltaPct(); ok {
			jr.DeltaPct = &p
		}
		c := r.Launches
		jr.Launches.A, jr.Launches.B = jsonSummary(c.A), jsonSummary(c.B)
		if c.HasDelta {
			p := c.DeltaPct
			jr.Launches.DeltaPct = &p
		}
		jr.Launches.P, jr.Launches.N1, jr.Launches.N2, jr.Launches.Significant, jr.Launches.Warnings = c.P, c.N1, c.N2, c.Significant, c.Warnings
		if r.HasNoise {
			n := r.Noise
			jr.NoisePct = &n
		}
		j.Results = append(j.Results, jr)
	}
	for _, f := range d.Fields {
		if !opts.All && !f.Changed && !f.Unknown {
			j.Folded++
			continue
		}
		j.Fields = append(j.Fields, FieldRowJSON{Group: f.Group, Name: sanitize.OneLine(f.Name), A: sanitize.OneLine(f.A), B: sanitize.OneLine(f.B), Changed: f.Changed, Unknown: f.Unknown})
	}
	if r := d.Range; r != nil {
		cr := JSONCommitRange{CommitRange: *r, FromShort: git.ShortID(sanitize.OneLine(r.From)), ToShort: git.ShortID(sanitize.OneLine(r.To))}
		cr.From, cr.To, cr.Err = sanitize.OneLine(r.From), sanitize.OneLine(r.To), sanitize.OneLine(r.Err)
		for _, l := range []*[]string{&cr.Ahead, &cr.Behind, &cr.Files} {
			clean := make([]string, len(*l))
			for i, s := range *l {
				clean[i] = sanitize.OneLine(s)
			}
			*l = clean
		}
		j.Range = &cr
	}
	if c, ok := d.Culprit(); ok {
		j.Culprit = &JSONCulprit{Text: c.Text(), Regression: c.Regression, Decided: c.Decided, Good: c.Good, GoodTokS: c.GoodTokS, Bad: c.Bad, BadTokS: c.BadTokS,
			MeasuredInside: c.MeasuredInside, Candidates: c.Candidates, Named: append([]string{}, c.Named...), Unmeasured: c.Unmeasured}
	}
	for _, n := range d.Noise {
		j.Noise = append(j.Noise, JSONNoiseRow{Config: sanitize.OneLine(n.Config), Launches: n.Launches, Metric: n.Metric, SpreadPct: n.Spread, Lo: n.Lo, Hi: n.Hi})
	}
	return j
}

// WriteDiffJSON writes BuildDiffJSON(d, opts), indented. It returns w's
// error.
func WriteDiffJSON(w io.Writer, d *compare.Diff, opts DiffOptions) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(BuildDiffJSON(d, opts))
}

// diffFormats are the forms `journal diff --format` takes.
var diffFormats = map[string]func(io.Writer, *compare.Diff, DiffOptions) error{
	"text": WriteDiffText, "md": WriteDiffMarkdown, "json": WriteDiffJSON,
}

// WriteDiff writes d in format ("text", "md" or "json"); an unknown format
// is an error naming the known ones.
func WriteDiff(w io.Writer, d *compare.Diff, format string, opts DiffOptions) error {
	write, ok := diffFormats[format]
	if !ok {
		return fmt.Errorf("diff format %q: want %s", sanitize.OneLine(format), strings.Join([]string{"text", "md", "json"}, ", "))
	}
	return write(w, d, opts)
}
