package compare

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// ErrNoExperiment is wrapped by Compare's error for an id or name that
// names no experiment.
var ErrNoExperiment = errors.New("no such experiment")

// MinLaunches is how many launches each side needs before the Mann–Whitney
// U test can find a difference at α = 0.05 (benchmath's warning).
const MinLaunches = 4

// The result rows' metrics, in the order Compare lists them.
const (
	MetricLogTokS = "tok/s (server log)"
	// MetricAccept is the EAGLE accept length (accepted tokens per verify
	// step) from the server log, its median over the steady samples; the
	// row shows only when a side has one.
	MetricAccept    = "EAGLE accept length"
	MetricBenchTokS = "output tok/s (bench)"
	MetricTTFT      = "TTFT median"
	// MetricITL is the median over requests of each request's median
	// gap between content chunks (requests with at least two chunks), for
	// the cells and the per-launch values alike.
	MetricITL  = "ITL median per request"
	MetricTPOT = "TPOT median"
	MetricE2E  = "E2E median"
)

// The field rows' groups, in order.
var fieldGroups = []string{"commit", "patch", "env", "flags", "bench", "versions", "gpu", "host"}

// keyCache holds the ConfigKey and ClassKey of each experiment of one
// Compare: a key costs an encoding and a SHA-256, and each experiment is
// looked at several times.
type keyCache map[*ledger.Experiment][2]string

func (c keyCache) keys(x *ledger.Experiment) [2]string {
	k, ok := c[x]
	if !ok {
		k = launchKeys(x)
		c[x] = k
	}
	return k
}

// of is x's ConfigKey.
func (c keyCache) of(x *ledger.Experiment) string { return c.keys(x)[0] }

// class is x's ClassKey.
func (c keyCache) class(x *ledger.Experiment) string { return c.keys(x)[1] }

// ConfigKey is the identity of x's configuration, for grouping launches of
// the same configuration (one launch is one sample of a verdict): an
// opaque string made of its HEAD, its dirty patch's SHA-256, its launch's
// env (secrets redacted) and command line (less where it listens: --port
// and --host, see identityArgv), and the versions captured
// ("torch=2.9.1"; a probe that failed is left out, so a failed probe makes
// a configuration of its own rather than one that might hide an upgrade).
// It also holds the preset, the env profile and the host name. It is ""
// when the fingerprint lacks the commit or the dirty state (no repository,
// a failed capture) or the launch is not known in full (none, or an
// adopted server's without its command line): such an experiment is a
// configuration of its own.
func ConfigKey(x *ledger.Experiment) string { return launchKeys(x)[0] }

// ClassKey is the identity of x's configuration class: the experiments
// whose launch-to-launch (A/A) noise speaks for x's. It is ConfigKey
// without the code and its versions: the same host name, preset, env
// profile, launch env (secrets redacted) and command line, whatever the
// commit, the dirty patch and the versions captured. Launches of a class
// run the same server the same way on the same machine, so they share its
// noise: a bisect's commits are one class. "" when ConfigKey is "".
func ClassKey(x *ledger.Experiment) string { return launchKeys(x)[1] }

// endpointFlags are the launch flags that say where the server listens,
// not how it runs: a launch on another port (the demo picks a free one per
// start) is the same configuration.
var endpointFlags = []string{"--port", "--host"}

// identityArgv is argv without the endpoint flags and their values
// ("--port 30000", "--port=30000"): the command line as a configuration's
// identity. The field rows still show a changed port.
func identityArgv(argv []string) []string {
	out := make([]string, 0, len(argv))
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		name, _, eq := strings.Cut(a, "=")
		if !slices.Contains(endpointFlags, name) {
			out = append(out, a)
			continue
		}
		if !eq && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			i++ // its value
		}
	}
	return out
}

// launchKeys is x's ConfigKey and ClassKey, from one redaction of its
// launch.
func launchKeys(x *ledger.Experiment) [2]string {
	g, l := x.Git(), x.LaunchInfo()
	if g == nil || g.Head == "" || l == nil || len(l.Argv) == 0 || x.PatchUnknown() != "" {
		return [2]string{} // an adopted server's launch has no command line: not known in full
	}
	var versions []string
	for _, v := range x.Fingerprint.Versions { // Git is non-nil: so is the fingerprint
		if v.Err == "" {
			versions = append(versions, v.Name+"="+v.Value)
		}
	}
	slices.Sort(versions)
	return [2]string{launchKey(l, x.Fingerprint.Hostname, g.Head, g.PatchSHA256, versions, true),
		launchKey(l, x.Fingerprint.Hostname, "", "", nil, false)}
}

// launchKey is ConfigKey (code true: with the commit, patch and versions)
// or ClassKey (code false) of a launch l on the GPU host hostname.
func launchKey(l *event.LaunchInfo, hostname, head, patch string, versions []string, code bool) string {
	rl := server.RedactLaunch(*l)
	env := make([]string, 0, len(rl.Env))
	for k, v := range rl.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	// Each part is length-prefixed, so no two different configurations
	// write the same bytes.
	var b []byte
	put := func(s string) { b = append(strconv.AppendInt(b, int64(len(s)), 10), ':'); b = append(b, s...) }
	lists := [][]string{env, identityArgv(rl.Argv), versions}
	if code {
		put(head)
		put(patch)
	} else {
		put("class")
		lists = lists[:2]
	}
	put(l.Preset)
	put(l.Profile)
	put(hostname) // two GPU boxes are two configurations
	for _, list := range lists {
		b = strconv.AppendInt(b, int64(len(list)), 10)
		for _, s := range list {
			put(s)
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// LaunchClassKey is the ClassKey an experiment of a launch made as l
// (its preset, profile, env and command line) on the GPU host hostname
// (uname -n, the fingerprint's) would have: the class of a launch not
// made yet, a bisect's. "" when l has no command line.
func LaunchClassKey(l event.LaunchInfo, hostname string) string {
	if len(l.Argv) == 0 {
		return ""
	}
	return launchKey(&l, hostname, "", "", nil, false)
}

// launchID identifies the server launch an experiment measured: the
// launch's log path (per launch: server.Launch names it
// <preset>-<timestamp>.log) and the time the launch was requested.
type launchID struct {
	log string
	at  time.Time
}

// launchOfExp returns the launch x measured: x.Launch (set when the
// launch started x), else the fingerprint's (the running server's, for an
// experiment started by hand); ok is false when neither is known or it
// has neither a log path nor a time.
func launchOfExp(x *ledger.Experiment) (id launchID, ok bool) {
	l := x.Launch
	if l == nil && x.Fingerprint != nil {
		l = x.Fingerprint.Launch
	}
	if l == nil || (l.LogPath == "" && l.At.IsZero()) {
		return launchID{}, false
	}
	return launchID{l.LogPath, l.At}, true
}

// same reports whether a and b are one launch: the same log path and the
// same time, where a launch known without its time (a server adopted from
// its status) matches any time.
func (a launchID) same(b launchID) bool {
	return a.log == b.log && (a.at.IsZero() || b.at.IsZero() || a.at.Equal(b.at))
}

// groupByLaunch appends y to the group of its launch in groups (ids holds
// each group's launch), or to a new group; it returns both.
func groupByLaunch(groups [][]*ledger.Experiment, ids []launchID, y *ledger.Experiment, id launchID) ([][]*ledger.Experiment, []launchID) {
	for j := range ids {
		if ids[j].same(id) {
			if ids[j].at.IsZero() {
				ids[j].at = id.at // the group's time, once known
			}
			groups[j] = append(groups[j], y)
			return groups, ids
		}
	}
	return append(groups, []*ledger.Experiment{y}), append(ids, id)
}

// ConfigName names x's configuration as the experiments name it: "<profile>
// @ <short commit>" ("none @ a6d51c0"), or x's name when its profile or
// commit is not known.
func ConfigName(x *ledger.Experiment) string {
	p, c := x.Profile(), x.Commit()
	if p == "" || c == "" {
		return sanitize.OneLine(x.Name)
	}
	return sanitize.OneLine(p + " @ " + git.ShortID(c))
}

// Compare compares experiment b (new) with a (old), each named by its id
// or name (ids first), among exps (a ledger's experiments, in start
// order), and fills a Diff: the results with their verdicts across
// server launches (one value per launch, see Diff.LaunchesA), every
// fingerprint variable and the settings of the benchmark runs pooled, the
// commit range between them as recorded in any experiment's fingerprint,
// and the launch-to-launch noise of each configuration with at least 2
// launches.
//
// An open experiment's Result is zero (no server-log result): callers that
// compare one pass a copy with ledger.Ledger.Provisional's result. It
// returns an error wrapping ErrNoExperiment, listing the known ids, when a
// or b names none.
func Compare(exps []ledger.Experiment, a, b string) (*Diff, error) {
	xa, err := findExp(exps, a)
	if err != nil {
		return nil, err
	}
	xb, err := findExp(exps, b)
	if err != nil {
		return nil, err
	}
	d := &Diff{A: xa, B: xb}
	keys := keyCache{}
	d.SameConfig = keys.of(xa) != "" && keys.of(xa) == keys.of(xb)
	ga, gb := launchGroups(exps, xa, xb, keys), launchGroups(exps, xb, xa, keys)
	d.LaunchesA, d.LaunchesB = representatives(ga, xa), representatives(gb, xb)
	ra, rb := benchRuns(ga, xa), benchRuns(gb, xb)
	var settings []FieldRow
	if len(ra) > 0 && len(rb) > 0 {
		// Settings rows only when both sides ran a clean benchmark: a
		// side without one has no settings to compare.
		settings = benchSettingRows(ra, rb)
	}
	d.Results = resultRows(d, exps, keys, ga, gb, settings)
	d.Fields = fieldRows(xa, xb, settings)
	d.Range, d.RangeNote = findRange(exps, xa, xb)
	d.Measured = measureCommits(exps, keys, keys.class(xa), keys.class(xb))
	d.Noise = noiseRows(exps, keys)
	return d, nil
}

// findExp returns the experiment with id (else name) s.
func findExp(exps []ledger.Experiment, s string) (*ledger.Experiment, error) {
	for i := range exps {
		if exps[i].ID == s {
			return &exps[i], nil
		}
	}
	for i := range exps {
		if exps[i].Name == s {
			return &exps[i], nil
		}
	}
	ids := make([]string, 0, len(exps))
	for _, x := range exps {
		ids = append(ids, x.ID)
	}
	have := "none"
	if len(ids) > 0 {
		have = strings.Join(ids, ", ")
	}
	return nil, fmt.Errorf("experiment %q: %w (have %s)", sanitize.OneLine(s), ErrNoExperiment, have)
}

// launchGroups returns the launches of x's configuration: the
// experiments of each server launch of that configuration that have a
// result (server log or benchmark), grouped by launch (launchID), in
// order of each launch's first experiment; x's launch has x. Several
// experiments on one running server (e started by hand) are one launch:
// samples of one launch are correlated, so one launch is one sample of
// the verdict. x is alone when its configuration or its launch is not
// known (it never joins a group, and no such experiment joins x's), and
// when other has the same configuration (an A/A comparison: the same
// launches on both sides would compare nothing).
func launchGroups(exps []ledger.Experiment, x, other *ledger.Experiment, keys keyCache) [][]*ledger.Experiment {
	key := keys.of(x)
	if _, ok := launchOfExp(x); key == "" || !ok || key == keys.of(other) {
		return [][]*ledger.Experiment{{x}}
	}
	var out [][]*ledger.Experiment
	var ids []launchID
	for i := range exps {
		y := &exps[i]
		if y != x && (keys.of(y) != key || !hasResult(y)) {
			continue
		}
		if id, ok := launchOfExp(y); ok { // a launch not known is never pooled
			out, ids = groupByLaunch(out, ids, y, id)
		}
	}
	return out
}

// pick returns the experiment that stands for launch g: x when g holds
// it, else the one with the largest weight (the first of equals).
func pick(g []*ledger.Experiment, x *ledger.Experiment, weight func(*ledger.Experiment) int) *ledger.Experiment {
	best := g[0]
	for _, y := range g {
		if y == x {
			return x
		}
		if weight(y) > weight(best) {
			best = y
		}
	}
	return best
}

// logWeight is how many steady-state server-log samples x has.
func logWeight(x *ledger.Experiment) int { return x.Result.N }

// benchWeight is how many requests x's last clean benchmark run
// completed; 0 when it has none.
func benchWeight(x *ledger.Experiment) int {
	if r := ledger.LastBench(x); r != nil {
		return r.Completed
	}
	return 0
}

// representatives is one experiment per launch: x for its own, else the
// one with the most steady samples (the most benchmarked requests when
// none has any).
func representatives(groups [][]*ledger.Experiment, x *ledger.Experiment) []*ledger.Experiment {
	out := make([]*ledger.Experiment, len(groups))
	for i, g := range groups {
		y := pick(g, x, logWeight)
		if logWeight(y) == 0 {
			y = pick(g, x, benchWeight)
		}
		out[i] = y
	}
	return out
}

func hasResult(x *ledger.Experiment) bool { return x.Result.N > 0 || ledger.LastBench(x) != nil }

// findRange looks for the commits between a's and b's HEADs among the
// ranges recorded at each experiment's start (either direction).
func findRange(exps []ledger.Experiment, a, b *ledger.Experiment) (*event.CommitRange, string) {
	ga, gb := a.Git(), b.Git()
	for _, x := range []*ledger.Experiment{a, b} {
		if g := x.Git(); g == nil || g.Head == "" {
			if why := x.CommitUnknown(); why != "" {
				return nil, "not recorded: commit unknown for " + sanitize.OneLine(x.ID) + " (" + why + ")"
			}
			return nil, "not recorded: no repository for " + sanitize.OneLine(x.ID)
		}
	}
	if ga.Head == gb.Head {
		return nil, "same commit"
	}
	for i := range exps {
		r := exps[i].Git()
		if r == nil || r.Range == nil {
			continue
		}
		rg := *r.Range
		where := "recorded at " + sanitize.OneLine(exps[i].ID) + "'s start"
		switch {
		case rg.From == ga.Head && rg.To == gb.Head:
			return &rg, where
		case rg.From == gb.Head && rg.To == ga.Head:
			rg.From, rg.To = rg.To, rg.From
			rg.Ahead, rg.Behind = rg.Behind, rg.Ahead
			rg.AheadTotal, rg.BehindTotal = rg.BehindTotal, rg.AheadTotal
			return &rg, where + " (reversed)"
		}
	}
	from, to := git.ShortID(sanitize.OneLine(ga.Head)), git.ShortID(sanitize.OneLine(gb.Head))
	return nil, fmt.Sprintf("not recorded: no experiment started right after a move from %s to %s (git log --oneline %s..%s in the checkout lists it)", from, to, from, to)
}

// configLaunches groups the experiments of exps that keep accepts, have
// a result and a known configuration and launch: by configuration
// (ConfigKey, in order of each configuration's first launch), then by
// launch (groupByLaunch).
func configLaunches(exps []ledger.Experiment, cache keyCache, keep func(*ledger.Experiment) bool) (order []string, configs map[string][][]*ledger.Experiment) {
	configs = map[string][][]*ledger.Experiment{}
	ids := map[string][]launchID{}
	for i := range exps {
		x := &exps[i]
		k := cache.of(x)
		id, ok := launchOfExp(x)
		if k == "" || !ok || !hasResult(x) || (keep != nil && !keep(x)) {
			continue
		}
		if _, seen := configs[k]; !seen {
			order = append(order, k)
		}
		configs[k], ids[k] = groupByLaunch(configs[k], ids[k], x, id)
	}
	return order, configs
}

// noiseRows measures the launch-to-launch noise of each configuration
// with at least 2 launches with a result, per metric (server-log tok/s,
// benchmark output tok/s), in order of each configuration's first launch.
// A launch counts once (its experiment with the most samples of the
// metric); experiments whose launch is not known are left out.
func noiseRows(exps []ledger.Experiment, cache keyCache) []NoiseRow {
	order, configs := configLaunches(exps, cache, nil)
	var out []NoiseRow
	for _, k := range order {
		groups := configs[k]
		for i := range metrics {
			m := &metrics[i]
			if !m.noiseRow {
				continue
			}
			vals := m.launchValues(groups, nil)
			spread, ok := Spread(vals)
			if !ok {
				continue
			}
			out = append(out, NoiseRow{Config: ConfigName(groups[0][0]), Launches: len(vals), Metric: m.name,
				Spread: spread, Lo: slices.Min(vals), Hi: slices.Max(vals)})
		}
	}
	return out
}
