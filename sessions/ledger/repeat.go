package ledger

// RepeatSeries lists the repeats of a ledger: per series (the experiment
// the repeat began from, in the order of their first launch) its launches
// in start order. The series' own experiment is included when it is
// tagged or is the series named.
func RepeatSeries(exps []Experiment) (series []string, launches map[string][]*Experiment) {
	launches = map[string][]*Experiment{}
	for i := range exps {
		x := &exps[i]
		s := ""
		switch {
		case x.Repeat != nil:
			s = x.Repeat.Series
		default:
			for j := i + 1; j < len(exps); j++ {
				if r := exps[j].Repeat; r != nil && r.Series == x.ID {
					s = x.ID
					break
				}
			}
		}
		if s == "" {
			continue
		}
		if _, ok := launches[s]; !ok {
			series = append(series, s)
		}
		if !containsExp(launches[s], x) {
			launches[s] = append(launches[s], x)
		}
	}
	return series, launches
}

func containsExp(xs []*Experiment, x *Experiment) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
